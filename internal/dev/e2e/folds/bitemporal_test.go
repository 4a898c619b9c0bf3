package folds

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
	"github.com/google/go-cmp/cmp"
)

// temporalCase is one case of testdata/databricks-temporal.json, a copy of
// ../shared/acceptance/databricks-temporal.json.
type temporalCase struct {
	Name   string `json:"name"`
	Config struct {
		Keys       []string `json:"keys"`
		SequenceBy string   `json:"sequence_by"`
		SystemSeq  string   `json:"system_sequence_by"`
		Except     []string `json:"except_columns"`
	} `json:"config"`
	Input    []map[string]any `json:"input"`
	Compare  []string         `json:"compare_columns"`
	Expected []map[string]any `json:"expected"`
}

var customersImage = schema.Columns{
	{Name: "customer_id", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "email", Type: schema.String},
	{Name: "city", Type: schema.String}, {Name: "status", Type: schema.String}, {Name: "source_updated_at", Type: schema.Timestamp},
	{Name: "source_sequence", Type: schema.Int64}, {Name: "transaction_sequence", Type: schema.Int64},
	{Name: "ingested_at", Type: schema.Timestamp}, {Name: "operation", Type: schema.String}, {Name: "last_synced_at", Type: schema.Timestamp},
}

// acceptance times carry no zone: they are read as UTC.
func acceptanceTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		t.Fatal(err)
	}
	return at.UTC()
}

// TestDatabricksBitemporalScenario: the bitemporal scenario measured on
// Databricks gives the measured target, in every arrival order of its
// events, before and after compaction; the view equals the reference
// model; <target>_as_of answers "what did we believe at system time S about
// business time B".
func TestDatabricksBitemporalScenario(t *testing.T) {
	c := testenv.AcceptanceCase[temporalCase](t, "../testdata/databricks-temporal.json", "measured_bitemporal_three_events")
	ctx := context.Background()
	for i, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			e := testenv.New(t, stack, testenv.Project("bitemporal", int64(i)))
			source := fmt.Sprintf("bt.customers%d", i)
			cols := e.CreateSource(t, source, customersImage)
			flowSQL := fmt.Sprintf("CREATE FLOW bitemporal%d AS AUTO CDC INTO customers_bt%d FROM STREAM(`%s`)\nKEYS (%s)\nSEQUENCE BY %s\nSYSTEM SEQUENCE BY %s\nCOLUMNS * EXCEPT (%s)\nSTORED AS BITEMPORAL;\n",
				i, i, source, strings.Join(c.Config.Keys, ", "), c.Config.SequenceBy, c.Config.SystemSeq,
				strings.Join(append(append([]string{}, c.Config.Except...), metadataNames()...), ", "))
			bound := e.ApplyFlows(t, "bt.sql", flowSQL, map[string]schema.Columns{source: cols})
			b := bound[0]
			base := time.Now().Add(-time.Hour)
			var rows []map[string]any
			for n, j := range order {
				row := map[string]any{catalog.ColMessageID: fmt.Sprintf("msg-%d", j), catalog.ColIngestedAt: base.Add(time.Duration(n) * time.Second).UnixMicro()}
				for k, v := range c.Input[j] {
					switch x := v.(type) {
					case float64:
						row[k] = int64(x)
					case string:
						if col, _ := cols.Lookup(k); col.Type == schema.Timestamp {
							row[k] = acceptanceTime(t, x).UnixMicro()
						} else {
							row[k] = x
						}
					}
				}
				rows = append(rows, row)
			}
			e.AppendRows(t, source, rows)

			var want []string
			for _, x := range c.Expected {
				var parts []string
				for _, col := range c.Compare {
					switch v := x[col].(type) {
					case nil:
						parts = append(parts, col+"=NULL")
					case float64:
						parts = append(parts, col+"="+viewcheck.Canon(int64(v)))
					case string:
						if col == "status" {
							parts = append(parts, col+"="+viewcheck.Canon(v))
						} else {
							parts = append(parts, col+"="+viewcheck.Canon(acceptanceTime(t, v)))
						}
					}
				}
				want = append(want, strings.Join(parts, " "))
			}
			sort.Strings(want)
			read := func(when string) {
				t.Helper()
				got, err := e.Query(fmt.Sprintf("SELECT %s FROM %s", strings.Join(c.Compare, ", "), e.Loc.ViewTable(b.Flow)))
				if err != nil {
					t.Fatal(err)
				}
				var lines []string
				for _, r := range got {
					var parts []string
					for _, col := range c.Compare {
						parts = append(parts, col+"="+viewcheck.Canon(r[col]))
					}
					lines = append(lines, strings.Join(parts, " "))
				}
				sort.Strings(lines)
				if d := cmp.Diff(want, lines); d != "" {
					t.Errorf("%s: view differs from the target measured on Databricks (-want +got):\n%s", when, d)
				}
				e.CheckViews(t, bound, when)
			}
			read("before compaction")
			e.CompactAt(t, bound, time.Now(), compact.Options{})
			read("after compaction")

			// What was believed at 10:02 about 10:03: only PENDING was known.
			// At 10:04 about 10:03: ACTIVE (known since 10:03).
			for _, q := range []struct{ business, system, status string }{
				{"2026-08-30T10:03:00", "2026-08-30T10:02:00", "PENDING"},
				{"2026-08-30T10:03:00", "2026-08-30T10:04:00", "ACTIVE"},
				{"2026-08-30T10:05:00", "2026-08-30T10:06:00", "SUSPENDED"},
				{"2026-08-30T10:05:00", "2026-08-30T10:00:30", ""},
			} {
				got, err := viewcheck.AsOf(ctx, e.BQ, b, e.Loc, render.Literal(acceptanceTime(t, q.business)), render.Literal(acceptanceTime(t, q.system)))
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				if q.status != "" {
					want = 1
				}
				if len(got) != want || (want == 1 && !strings.Contains(got[0], `status="`+q.status+`"`)) {
					t.Errorf("as_of(%s, %s) = %v, want status %q", q.business, q.system, got, q.status)
				}
			}
		})
	}
}

// TestBitemporalCorrectionsFollowSystemTime: the documented price
// correction (105 believed from Jan 5, corrected to 104 on Jan 8, both for
// business time Jan 1), plus a later price, published under every
// assignment of message ids and in every arrival order: the view's rows are
// the same each time, and the model's. (Before, the winner among events at
// one business time was the greater message id, so a correction whose id
// sorted lower was lost.)
func TestBitemporalCorrectionsFollowSystemTime(t *testing.T) {
	e := testenv.New(t, stack, "bitemporal-corrections")
	ctx := context.Background()
	// Days of January 2026 as numbers (business and system time).
	image := schema.Columns{{Name: "sku", Type: schema.Int64}, {Name: "price", Type: schema.Int64},
		{Name: "valid_from", Type: schema.Int64}, {Name: "known_at", Type: schema.Int64}}
	day := func(d int) int64 { return int64(20260100 + d) }
	events := []map[string]any{
		{"sku": int64(7), "price": int64(105), "valid_from": day(1), "known_at": day(5)},
		{"sku": int64(7), "price": int64(104), "valid_from": day(1), "known_at": day(8)}, // the correction
		{"sku": int64(7), "price": int64(110), "valid_from": day(10), "known_at": day(10)},
	}
	orders := [][]int{{0, 1, 2}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}}
	ids := [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"b", "a", "c"}, {"z", "a", "m"}}
	var first []string
	for i, order := range orders {
		src := fmt.Sprintf("bt.prices%d", i)
		bound := e.ApplySourceFlows(t, fmt.Sprintf("bt%d.sql", i), fmt.Sprintf(`
CREATE FLOW prices%[1]d AS AUTO CDC INTO prices%[1]d FROM STREAM(`+"`%[2]s`"+`)
KEYS (sku) SEQUENCE BY valid_from SYSTEM SEQUENCE BY known_at
COLUMNS (sku, price, valid_from, known_at) STORED AS BITEMPORAL;`, i, src), src, image)
		base := time.Now().Add(-time.Hour)
		var rows []map[string]any
		for j, k := range order {
			r := map[string]any{}
			for c, v := range events[k] {
				r[c] = v
			}
			r[catalog.ColMessageID] = ids[i][k]
			r[catalog.ColIngestedAt] = base.Add(time.Duration(j) * time.Second).UnixMicro()
			rows = append(rows, r)
		}
		e.AppendRows(t, src, rows)
		when := fmt.Sprintf("arrival %v, message ids %v", order, ids[i])
		e.CheckViews(t, bound, when)
		got, err := viewcheck.Actual(ctx, e.BQ, bound[0], e.Loc)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
			if s := strings.Join(got, "\n"); !strings.Contains(s, "price=int64:104") || !strings.Contains(s, "price=int64:105") {
				t.Fatalf("%s: the belief and its correction are not both held:\n%s", when, s)
			}
		} else if d := cmp.Diff(first, got); d != "" {
			t.Errorf("%s: rows differ from the first arrival (-first +this):\n%s", when, d)
		}
		e.CompactAt(t, bound, time.Now(), compact.Options{})
		e.CheckViews(t, bound, when+", after compaction")
	}
}

// TestBitemporalInOrderKeys: keys whose changes are learnt in the order
// they happened (sequence and system time rising together) take the view's
// one-pass path; keys with a correction or a late event take the fold at
// every system time. Random histories of both kinds in one flow (upserts
// that change a tracked column, an untracked one, or nothing; deletes and
// re-inserts) equal the model, before and after compaction.
func TestBitemporalInOrderKeys(t *testing.T) {
	e := testenv.New(t, stack, "bitemporal-in-order")
	image := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "status", Type: schema.String}, {Name: "note", Type: schema.String},
		{Name: "op", Type: schema.String}, {Name: "bt", Type: schema.Int64}, {Name: "st", Type: schema.Int64}}
	bound := e.ApplySourceFlows(t, "bt.sql", `
CREATE FLOW accounts AS AUTO CDC INTO accounts FROM STREAM(`+"`bt.accounts`"+`)
KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY bt SYSTEM SEQUENCE BY st
COLUMNS (id, status, note, bt, st) STORED AS BITEMPORAL TRACK HISTORY ON (status);`, "bt.accounts", image)
	r := rand.New(rand.NewSource(7))
	base := time.Now().Add(-time.Hour)
	var rows []map[string]any
	msg := 0
	for key := int64(1); key <= 12; key++ {
		bt, st := int64(0), int64(0)
		for i := 0; i < 6+r.Intn(8); i++ {
			bt += 1 + int64(r.Intn(3))
			st += 1 + int64(r.Intn(3))
			row := map[string]any{"id": key, "status": testenv.Pick(r, "open", "open", "frozen"), "note": testenv.Pick(r, "a", "b"), "op": "U", "bt": bt, "st": st}
			if r.Intn(6) == 0 {
				row["op"] = "D"
			}
			if key > 8 && i == 3 {
				row["bt"] = bt - 5 // a late event: this key takes the fold at every system time
			}
			msg++
			row[catalog.ColMessageID] = fmt.Sprintf("m%03d", msg)
			rows = append(rows, row)
		}
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	e.AppendIngested(t, "bt.accounts", rows, base)
	e.CheckViews(t, bound, "before compaction")
	for _, rep := range e.CompactAt(t, bound, time.Now(), compact.Options{}) {
		if rep.Outcome != compact.Compacted {
			t.Fatalf("compaction: %+v", rep)
		}
	}
	e.CheckViews(t, bound, "after compaction")
}

// TestBitemporalRandomCorrections: random histories in which a key's
// business time comes again later in system time (a correction with other
// values, or a delete), with message ids that sort either way, some
// messages redelivered, arrival shuffled, in three batches with a
// compaction after each: the view equals the model (the later system time
// replaces the earlier belief from then on; the current belief's rows
// have __SYSTEM_END_AT NULL) before and after every compaction (issue 38).
func TestBitemporalRandomCorrections(t *testing.T) {
	e := testenv.New(t, stack, "bitemporal-random-corrections")
	image := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "price", Type: schema.Int64}, {Name: "note", Type: schema.String},
		{Name: "op", Type: schema.String}, {Name: "bt", Type: schema.Int64}, {Name: "st", Type: schema.Int64}}
	bound := e.ApplySourceFlows(t, "btc.sql", `
CREATE FLOW prices_all AS AUTO CDC INTO prices_all FROM STREAM(`+"`bt.corrections`"+`)
KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY bt SYSTEM SEQUENCE BY st
COLUMNS (id, price, note, bt, st) STORED AS BITEMPORAL;
CREATE FLOW prices_tracked AS AUTO CDC INTO prices_tracked FROM STREAM(`+"`bt.corrections`"+`)
KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY bt SYSTEM SEQUENCE BY st
COLUMNS (id, price, note, bt, st) STORED AS BITEMPORAL TRACK HISTORY ON (price);
CREATE FLOW prices_ingested AS AUTO CDC INTO prices_ingested FROM STREAM(`+"`bt.corrections`"+`)
KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY bt SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (id, price, note, bt, st, _cdc_ingested_at) STORED AS BITEMPORAL;
CREATE FLOW prices_fill AS AUTO CDC INTO prices_fill FROM STREAM(`+"`bt.corrections`"+`)
KEYS (id) APPLY AS DELETE WHEN op = 'D' SEQUENCE BY bt SYSTEM SEQUENCE BY st
COLUMNS (id, price, note, bt, st) STORED AS BITEMPORAL IGNORE NULL UPDATES ON (price);`, "bt.corrections", image)
	for _, seed := range []int64{2, 3} { // seed 1 passed before the fix too: 2 and 3 have corrections that restore a value
		r := rand.New(rand.NewSource(seed))
		var rows []map[string]any
		for key := int64(1); key <= 10; key++ {
			var bts []int64
			bt, st := int64(0), int64(0)
			for i := 0; i < 4+r.Intn(6); i++ {
				st += int64(r.Intn(3)) // sometimes learnt together with the one before
				at := bt + 1 + int64(r.Intn(2))
				if len(bts) > 0 && r.Intn(3) == 0 {
					at = bts[r.Intn(len(bts))] // a correction of what an earlier event said
				} else {
					bt = at
				}
				bts = append(bts, at)
				row := map[string]any{"id": key + 100*seed, "price": int64(100 + r.Intn(4)), "note": testenv.Pick(r, "a", "b"), "op": "U", "bt": at, "st": st,
					catalog.ColMessageID: fmt.Sprintf("%c%04d", 'a'+r.Intn(26), r.Intn(10000))}
				switch r.Intn(6) {
				case 0:
					row["op"] = "D"
				case 1:
					row["price"] = nil
				}
				rows = append(rows, row)
				if r.Intn(8) == 0 { // redelivered
					dup := map[string]any{}
					for k, v := range row {
						dup[k] = v
					}
					rows = append(rows, dup)
				}
			}
		}
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		// Each batch is ingested after the watermark of the compaction
		// before it, as ingest times follow the clock.
		clock := time.Now().Add(-time.Hour).Add(time.Duration(seed) * 10 * time.Minute)
		for batch := 0; batch < 3; batch++ {
			part := rows[batch*len(rows)/3 : (batch+1)*len(rows)/3]
			e.AppendIngested(t, "bt.corrections", part, clock)
			clock = clock.Add(time.Minute)
			when := fmt.Sprintf("seed %d, batch %d", seed, batch)
			e.CheckViews(t, bound, when+", before compaction")
			for _, rep := range e.CompactAt(t, bound, clock, compact.Options{}) {
				if rep.Outcome == compact.Failed {
					t.Fatalf("%s: compaction: %+v", when, rep)
				}
			}
			e.CheckViews(t, bound, when+", after compaction")
		}
	}
}
