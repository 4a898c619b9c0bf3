package property

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// snapshotSeeds bounds the seeds of TestSnapshotsMatchModel (each loads
// several snapshots into a table of its own and compacts at random points):
// at most 4, so the binary stays within its budget.
func snapshotSeeds() []int64 {
	all := seeds()
	return all[:min(4, len(all))]
}

// snapshotFlows: SCD 1, and SCD 2 tracking one column with a WHERE, over
// one table of snapshots.
func snapshotFlows(table, p string) string {
	return fmt.Sprintf(`
CREATE FLOW %[2]s_snap1 AS AUTO CDC FROM SNAPSHOT INTO %[2]s_snap1 FROM cdc.%[1]s
KEYS (k1, k2) VERSION BY ver STORED AS SCD TYPE 1;

CREATE FLOW %[2]s_snap2 AS AUTO CDC FROM SNAPSHOT INTO %[2]s_snap2 FROM cdc.%[1]s
KEYS (k1, k2) VERSION BY ver
WHERE v_int IS DISTINCT FROM 13
STORED AS SCD TYPE 2 TRACK HISTORY ON (v_str);
`, table, p)
}

// snapshotLoad is one snapshot: its version and rows.
type snapshotLoad struct {
	version bigquery.Value
	rows    []map[string]bigquery.Value
}

// genSnapshots makes 4 to 6 snapshots of up to 6 keys (a NULL key part
// included), versions ascending, then shuffles the load order a little: a
// snapshot loaded after a newer one was applied must be skipped.
func genSnapshots(r *rand.Rand, timestamps bool, base time.Time) []snapshotLoad {
	n := 4 + r.Intn(3)
	var loads []snapshotLoad
	for i := 0; i < n; i++ {
		var version bigquery.Value = int64(10*i + r.Intn(5))
		if timestamps {
			// Fractional seconds: the emulator mishandles them in joins,
			// windows and partitions, which the version keys avoid.
			version = base.Add(time.Duration(i)*time.Hour + time.Duration(r.Intn(1_000_000))*time.Microsecond)
		}
		var rows []map[string]bigquery.Value
		for k1 := int64(1); k1 <= 3; k1++ {
			for _, k2 := range []bigquery.Value{"a", nil} {
				if r.Intn(10) < 3 {
					continue // missing from this snapshot: deleted
				}
				rows = append(rows, map[string]bigquery.Value{
					"k1": k1, "k2": k2, "ver": version,
					"v_str": testenv.Maybe(r, testenv.Pick(r, "x", "y")), "v_int": testenv.Maybe(r, testenv.Pick(r, int64(1), int64(2), int64(13))),
				})
			}
		}
		loads = append(loads, snapshotLoad{version: version, rows: rows})
	}
	for i := 1; i < len(loads); i++ {
		if r.Intn(10) < 3 {
			loads[i-1], loads[i] = loads[i], loads[i-1]
		}
	}
	return loads
}

var snapshotImage = schema.Columns{
	{Name: "k1", Type: schema.Int64}, {Name: "k2", Type: schema.String}, {Name: "v_str", Type: schema.String},
	{Name: "v_int", Type: schema.Int64},
}

func versionLess(a, b bigquery.Value) bool { return model.Compare(a, b) < 0 }

// TestSnapshotsMatchModel loads random snapshots (keys missing and back,
// NULL key parts and values, a WHERE, TIMESTAMP versions with fractional
// seconds or INT64 ones), a few out of order, and compares both views with
// the reference model after every load and every compaction step;
// compaction runs at random points, 30 % of runs crash after a random step
// and are re-run. A snapshot loaded at or before the applied version is
// left out of the model, and every run's count of skipped rows must be
// those rows.
func TestSnapshotsMatchModel(t *testing.T) {
	for _, seed := range snapshotSeeds() {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			ctx := context.Background()
			r := rand.New(rand.NewSource(seed))
			e := testenv.New(t, stack, testenv.Project("snapshots", seed))
			table := fmt.Sprintf("snaps%d", seed)
			timestamps := seed%2 == 0
			cols := append(schema.Columns{}, snapshotImage...)
			verType := schema.Int64
			if timestamps {
				verType = schema.Timestamp
			}
			cols = append(cols, schema.Column{Name: "ver", Type: verType})
			tb, bound := e.ApplySnapshotFlows(t, "snap.sql", snapshotFlows(table, fmt.Sprintf("s%d", seed)), table, cols)

			var applied []map[string]bigquery.Value // rows of the snapshots the views apply
			var appliedMax bigquery.Value           // the newest version compaction applied
			var newest bigquery.Value               // the newest version loaded
			skipped := int64(0)
			check := func(when string) {
				t.Helper()
				for _, b := range bound {
					got, err := viewcheck.Actual(ctx, e.BQ, b, e.Loc)
					if err != nil {
						t.Fatal(err)
					}
					want := viewcheck.SnapshotExpected(b, snapshotModelRows(b, applied))
					if d := viewcheck.Diff(want, got); d != "" {
						t.Errorf("seed %d, %s: view %s differs from the model:\n%s", seed, when, b.Target, d)
					}
				}
			}
			now := time.Now()
			compactOnce := func(when string) {
				t.Helper()
				crashAt := ""
				if r.Intn(10) < 3 {
					crashAt = testenv.Pick(r, compact.StepFold, compact.StepGC, compact.StepView)
				}
				now = now.Add(time.Minute)
				at := now
				// SnapshotSettle off: the model applies every snapshot loaded
				// (TestSnapshotSettle covers the newest version waiting).
				opts := compact.Options{VisibilityLag: time.Second, Now: func() time.Time { return at }, Backoff: 20 * time.Millisecond, Concurrency: 1, SnapshotSettle: -1,
					AfterStep: func(flowName, step string) error {
						if r.Intn(3) == 0 {
							check(fmt.Sprintf("%s, compaction of %s after %s", when, flowName, step))
						}
						if step == crashAt {
							return errors.New(testenv.InjectedCrash)
						}
						return nil
					}}
				reports := compact.New(e.BQ, e.Loc, opts).Run(ctx, bound)
				if crashAt != "" {
					check(fmt.Sprintf("%s, crashed after %s", when, crashAt))
					opts.AfterStep, at = nil, at.Add(time.Second)
					reports = compact.New(e.BQ, e.Loc, opts).Run(ctx, bound)
				}
				for _, rep := range reports {
					if rep.Outcome == compact.Failed {
						t.Fatalf("seed %d, %s: compaction of %s failed: %s", seed, when, rep.Flow, rep.Error)
					}
					if rep.Outcome != compact.Idle && rep.RowsSkipped != skipped {
						t.Errorf("seed %d, %s: compaction of %s counted %d rows skipped, want %d", seed, when, rep.Flow, rep.RowsSkipped, skipped)
					}
				}
				appliedMax = newest
				check(when + ", compacted")
			}
			loads := genSnapshots(r, timestamps, time.Now().Add(-24*time.Hour).UTC().Truncate(time.Hour))
			for i, l := range loads {
				if len(l.rows) > 0 {
					testenv.LoadSnapshot(t, tb, cols, l.rows)
				}
				if appliedMax != nil && !versionLess(appliedMax, l.version) {
					skipped += int64(len(l.rows)) // at or before the applied version: skipped
				} else {
					applied = append(applied, l.rows...)
				}
				if newest == nil || versionLess(newest, l.version) {
					newest = l.version
				}
				when := fmt.Sprintf("snapshot %d of %d (version %v)", i+1, len(loads), l.version)
				check(when)
				if r.Intn(10) < 6 {
					compactOnce(when)
				}
			}
			compactOnce("the end")
		})
	}
}

// snapshotModelRows turns loaded rows into the model's, values canonical as
// viewcheck reads them; the flow's WHERE (v_int IS DISTINCT FROM 13, for
// the flow that has one) drops rows from its snapshots.
func snapshotModelRows(b *flow.Bound, rows []map[string]bigquery.Value) []model.SnapshotRow {
	var out []model.SnapshotRow
	for _, row := range rows {
		if b.Where != "" && row["v_int"] == int64(13) {
			continue
		}
		m := model.SnapshotRow{Version: row["ver"], Values: map[string]any{}}
		for _, k := range b.Keys {
			m.Key = append(m.Key, canonOrNil(row[k.Name]))
		}
		for _, c := range b.Output {
			if _, isKey := b.Keys.Lookup(c.Name); !isKey {
				m.Values[c.Name] = canonOrNil(row[c.Name])
			}
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Compare(model.KeyString(out[i].Key), model.KeyString(out[j].Key)) < 0
	})
	return out
}

func canonOrNil(v bigquery.Value) any {
	if v == nil {
		return nil
	}
	return viewcheck.Canon(v)
}
