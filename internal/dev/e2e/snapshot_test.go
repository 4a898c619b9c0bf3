package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/status"
	"github.com/google/go-cmp/cmp"
)

// snapshotCase is one AUTO CDC FROM SNAPSHOT case of
// testdata/databricks-temporal.json (a copy of
// ../shared/acceptance/databricks-temporal.json): snapshots in load order,
// each a version and its rows, and the documented target.
type snapshotCase struct {
	Name   string `json:"name"`
	Config struct {
		Keys    []string `json:"keys"`
		SCDType int      `json:"scd_type"`
	} `json:"config"`
	Input []struct {
		Version string           `json:"snapshot_version"`
		Rows    []map[string]any `json:"rows"`
	} `json:"input"`
	Expected          []map[string]any `json:"expected"`
	ExpectedAfterRun1 []map[string]any `json:"expected_after_run_1"`
}

func loadSnapshotCase(t *testing.T, name string) snapshotCase {
	t.Helper()
	return testenv.AcceptanceCase[snapshotCase](t, "testdata/databricks-temporal.json", name)
}

// snapshotEnv is one test's snapshot table and flow.
type snapshotEnv struct {
	e     *testenv.Env
	table *bigquery.Table
	cols  schema.Columns
	b     *flow.Bound
	clock time.Time
	// settle is compact.Options.SnapshotSettle (-1, off, unless a test
	// sets it: the documented examples load each snapshot whole).
	settle time.Duration
}

// newSnapshotEnv creates the table (in the stack's dataset) and applies
// the flow, checking that a second apply changes nothing.
func newSnapshotEnv(t *testing.T, project, table string, cols schema.Columns, flowSQL string) *snapshotEnv {
	t.Helper()
	e := testenv.New(t, stack, project)
	ctx := context.Background()
	tb, bound := e.ApplySnapshotFlows(t, "snapshots.sql", flowSQL, table, cols)
	var rep apply.Report
	if err := apply.FlowObjects(ctx, e.BQ, e.Loc, bound[0], e.Apply, &rep); err != nil {
		t.Fatalf("applying again: %v", err)
	}
	// A second apply changes nothing (and, with no watermark to read and no
	// table functions, runs no query job).
	for _, line := range rep {
		if !strings.HasSuffix(line, ": unchanged") {
			t.Errorf("second apply: %s", line)
		}
	}
	return &snapshotEnv{e: e, table: tb, cols: cols, b: bound[0], clock: time.Now(), settle: -1}
}

// load appends one snapshot's rows, as a scheduled load would.
func (s *snapshotEnv) load(t *testing.T, rows []map[string]bigquery.Value) {
	t.Helper()
	testenv.LoadSnapshot(t, s.table, s.cols, rows)
}

// compact runs one compaction and returns its report.
func (s *snapshotEnv) compact(t *testing.T) compact.Report {
	t.Helper()
	s.clock = s.clock.Add(time.Minute)
	now := s.clock
	opts := compact.Options{VisibilityLag: time.Second, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond, SnapshotSettle: s.settle}
	r := compact.New(s.e.BQ, s.e.Loc, opts).Flow(context.Background(), s.b)
	if r.Outcome == compact.Failed {
		t.Fatalf("compaction: %s", r.Error)
	}
	return r
}

// view reads the target: one canonical line per row, sorted.
func (s *snapshotEnv) view(t *testing.T) []string {
	t.Helper()
	got, err := viewcheck.Actual(context.Background(), s.e.BQ, s.b, s.e.Loc)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// expectedLines renders documented target rows as viewcheck canonical lines.
func expectedLines(b *flow.Bound, rows []map[string]any, version func(any) bigquery.Value) []string {
	var out []string
	for _, r := range rows {
		var parts []string
		for _, c := range b.Output {
			parts = append(parts, c.Name+"="+viewcheck.CanonJSON(r[c.Name]))
		}
		if b.SCDType == 2 {
			parts = append(parts, catalog.StartAt+"="+viewcheck.Canon(version(r[catalog.StartAt])), catalog.EndAt+"="+viewcheck.Canon(version(r[catalog.EndAt])))
		}
		out = append(out, strings.Join(parts, " "))
	}
	sort.Strings(out)
	return out
}

func (s *snapshotEnv) expect(t *testing.T, want []string, when string) {
	t.Helper()
	if d := cmp.Diff(want, s.view(t)); d != "" {
		t.Errorf("%s: view differs from the documented target (-want +got):\n%s", when, d)
	}
}

// docTime reads the documentation's versions ("2024-01-01 12:00:00", UTC).
func docTime(t *testing.T, v any) bigquery.Value {
	if v == nil {
		return nil
	}
	at, err := time.Parse(time.DateTime, v.(string))
	if err != nil {
		t.Fatal(err)
	}
	return at.UTC()
}

// TestSnapshotPeriodicSCD2: the documented periodic-snapshot example (SCD 2,
// versions as timestamps: key 1 missing from the second snapshot is deleted
// at its version). Loaded at once, before and after compaction; loaded in
// two steps with a compaction between; an older snapshot loaded after a
// newer one was applied is skipped, and compaction counts its rows.
func TestSnapshotPeriodicSCD2(t *testing.T) {
	c := loadSnapshotCase(t, "dbx_doc_snapshot_periodic_scd2_old")
	cols := schema.Columns{{Name: "Key", Type: schema.Int64}, {Name: "Value", Type: schema.String}, {Name: "snapshot_version", Type: schema.Timestamp}}
	snapshot := func(i int) []map[string]bigquery.Value {
		var rows []map[string]bigquery.Value
		for _, r := range c.Input[i].Rows {
			rows = append(rows, map[string]bigquery.Value{"Key": int64(r["Key"].(float64)), "Value": r["Value"], "snapshot_version": docTime(t, c.Input[i].Version)})
		}
		return rows
	}
	flowSQL := func(n int) string {
		return fmt.Sprintf("CREATE FLOW periodic%d AS AUTO CDC FROM SNAPSHOT INTO periodic%d\nFROM cdc.extracts%d\nKEYS (%s)\nVERSION BY snapshot_version\nSTORED AS SCD TYPE %d;\n",
			n, n, n, strings.Join(c.Config.Keys, ", "), c.Config.SCDType)
	}
	version := func(v any) bigquery.Value { return docTime(t, v) }

	t.Run("loaded at once", func(t *testing.T) {
		s := newSnapshotEnv(t, testenv.Project("snapshot-periodic", 0), "extracts0", cols, flowSQL(0))
		want := expectedLines(s.b, c.Expected, version)
		s.load(t, append(snapshot(1), snapshot(0)...)) // load order does not matter before compaction
		s.expect(t, want, "before compaction")
		if r := s.compact(t); r.Outcome != compact.Compacted || r.EventsRead != 4 {
			t.Errorf("compaction: %+v", r)
		}
		s.expect(t, want, "after compaction")
		if r := s.compact(t); r.Outcome != compact.Idle && r.Outcome != compact.UpToDate {
			t.Errorf("second compaction: %s, want idle or up to date", r.Outcome)
		}
		s.expect(t, want, "after a second compaction")
	})

	t.Run("two steps and a late older snapshot", func(t *testing.T) {
		s := newSnapshotEnv(t, testenv.Project("snapshot-periodic", 1), "extracts1", cols, flowSQL(1))
		want := expectedLines(s.b, c.Expected, version)
		s.load(t, snapshot(0))
		// After the first snapshot: keys 1 and 2 open at its version.
		first := expectedLines(s.b, []map[string]any{
			{"Key": 1.0, "Value": "a1", "__START_AT": c.Input[0].Version},
			{"Key": 2.0, "Value": "a2", "__START_AT": c.Input[0].Version},
		}, version)
		s.expect(t, first, "first snapshot")
		if r := s.compact(t); r.Outcome != compact.Compacted || r.EventsRead != 2 {
			t.Errorf("first compaction: %+v", r)
		}
		s.expect(t, first, "first snapshot, compacted")
		s.load(t, snapshot(1))
		s.expect(t, want, "second snapshot, before compaction")
		r := s.compact(t)
		if r.Outcome != compact.Compacted || r.EventsRead != 2 || r.RowsSkipped != 0 || r.AppliedVersion != "TIMESTAMP '2024-01-01 12:00:00+00:00'" {
			t.Errorf("second compaction: %+v", r)
		}
		s.expect(t, want, "second snapshot, compacted")

		// A snapshot older than the applied one: skipped, and counted.
		late := []map[string]bigquery.Value{
			{"Key": int64(1), "Value": "old", "snapshot_version": docTime(t, "2024-01-01 06:00:00")},
			{"Key": int64(9), "Value": "old", "snapshot_version": docTime(t, "2024-01-01 06:00:00")},
		}
		s.load(t, late)
		s.expect(t, want, "older snapshot loaded late")
		r = s.compact(t)
		if r.Outcome != compact.UpToDate || r.RowsSkipped != 2 || r.EventsRead != 0 {
			t.Errorf("compaction after the late snapshot: %+v, want up to date with 2 rows skipped", r)
		}
		s.expect(t, want, "older snapshot loaded late, compacted")
		// A newer snapshot still applies; the skipped rows stay counted.
		s.load(t, []map[string]bigquery.Value{{"Key": int64(3), "Value": "a3", "snapshot_version": docTime(t, "2024-01-02 00:00:00")}})
		third := expectedLines(s.b, []map[string]any{
			{"Key": 1.0, "Value": "a1", "__START_AT": "2024-01-01 00:00:00", "__END_AT": "2024-01-01 12:00:00"},
			{"Key": 2.0, "Value": "a2", "__START_AT": "2024-01-01 00:00:00", "__END_AT": "2024-01-01 12:00:00"},
			{"Key": 2.0, "Value": "b2", "__START_AT": "2024-01-01 12:00:00", "__END_AT": "2024-01-02 00:00:00"},
			{"Key": 3.0, "Value": "a3", "__START_AT": "2024-01-01 12:00:00"},
		}, version)
		s.expect(t, third, "third snapshot, before compaction")
		r = s.compact(t)
		if r.Outcome != compact.Compacted || r.RowsSkipped != 2 || r.EventsRead != 1 {
			t.Errorf("third compaction: %+v", r)
		}
		s.expect(t, third, "third snapshot, compacted")
	})
}

// TestSnapshotIngestionTimeSCD1: the documented SCD 1 example whose
// snapshots Databricks versions by ingestion time; bqcdc reads appended
// snapshots, so its versions are the run numbers (VERSION BY run).
func TestSnapshotIngestionTimeSCD1(t *testing.T) {
	c := loadSnapshotCase(t, "dbx_doc_snapshot_ingestion_time_scd1_new")
	cols := schema.Columns{{Name: "userId", Type: schema.Int64}, {Name: "city", Type: schema.String}, {Name: "run", Type: schema.Int64}}
	snapshot := func(i int) []map[string]bigquery.Value {
		var rows []map[string]bigquery.Value
		for _, r := range c.Input[i].Rows {
			rows = append(rows, map[string]bigquery.Value{"userId": int64(r["userId"].(float64)), "city": r["city"], "run": int64(i + 1)})
		}
		return rows
	}
	flowSQL := func(n int) string {
		return fmt.Sprintf("APPLY CHANGES FROM SNAPSHOT INTO users_run%d\nFROM `cdc.user_extracts%d`\nKEYS (%s)\nVERSION BY run;\n",
			n, n, strings.Join(c.Config.Keys, ", "))
	}
	t.Run("loaded at once", func(t *testing.T) {
		s := newSnapshotEnv(t, testenv.Project("snapshot-runs", 0), "user_extracts0", cols, flowSQL(0))
		want := expectedLines(s.b, c.Expected, nil)
		s.load(t, append(snapshot(0), snapshot(1)...))
		s.expect(t, want, "before compaction")
		s.compact(t)
		s.expect(t, want, "after compaction")
	})
	t.Run("run by run", func(t *testing.T) {
		s := newSnapshotEnv(t, testenv.Project("snapshot-runs", 1), "user_extracts1", cols, flowSQL(1))
		s.load(t, snapshot(0))
		s.expect(t, expectedLines(s.b, c.ExpectedAfterRun1, nil), "after run 1")
		if r := s.compact(t); r.Outcome != compact.Compacted || r.AppliedVersion != "1" {
			t.Errorf("compaction of run 1: %+v", r)
		}
		s.expect(t, expectedLines(s.b, c.ExpectedAfterRun1, nil), "after run 1, compacted")
		s.load(t, snapshot(1))
		want := expectedLines(s.b, c.Expected, nil)
		s.expect(t, want, "after run 2")
		s.compact(t)
		s.expect(t, want, "after run 2, compacted")
		// Run 0, loaded late: skipped.
		s.load(t, []map[string]bigquery.Value{{"userId": int64(1), "city": "Oaxaca", "run": int64(0)}})
		s.expect(t, want, "run 0 loaded late")
		if r := s.compact(t); r.RowsSkipped != 1 {
			t.Errorf("compaction after run 0: %+v, want 1 row skipped", r)
		}
		s.expect(t, want, "run 0 loaded late, compacted")
	})
}

// TestSnapshotFlowStatus: bqcdc status and the _bqcdc_status view show a
// snapshot flow (no changelog) with its last compaction run, the version it
// applied and the rows of a snapshot loaded too late to apply.
func TestSnapshotFlowStatus(t *testing.T) {
	cols := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "city", Type: schema.String}, {Name: "run", Type: schema.Int64}}
	s := newSnapshotEnv(t, "snapshot-status", "extracts", cols,
		"CREATE FLOW extracts AS AUTO CDC FROM SNAPSHOT INTO extracts_now FROM cdc.extracts KEYS (id) VERSION BY run;\n")
	ctx := context.Background()
	var rep apply.Report
	if err := apply.DeadLetters(ctx, s.e.BQ, s.e.Loc.DefaultDataset, 0, &rep); err != nil {
		t.Fatal(err)
	}
	flows := []*flow.Flow{s.b.Flow}
	if err := apply.Status(ctx, s.e.BQ, s.e.Loc, flows, &rep); err != nil {
		t.Fatal(err)
	}
	mp, err := metrics.Start(ctx, metrics.Config{Exporter: metrics.ExportMemory})
	if err != nil {
		t.Fatal(err)
	}
	run := func() {
		s.clock = s.clock.Add(time.Minute)
		now := s.clock
		opts := compact.Options{VisibilityLag: time.Second, Now: func() time.Time { return now }, Backoff: 20 * time.Millisecond, Reports: s.e.W, SnapshotSettle: -1,
			Metrics: mp.Recorder()}
		if r := compact.New(s.e.BQ, s.e.Loc, opts).Run(ctx, []*flow.Bound{s.b})[0]; r.Outcome == compact.Failed {
			t.Fatalf("compaction: %s", r.Error)
		}
	}
	s.load(t, []map[string]bigquery.Value{{"id": int64(1), "city": "Lima", "run": int64(2)}, {"id": int64(2), "city": "Quito", "run": int64(2)}})
	run()
	s.load(t, []map[string]bigquery.Value{{"id": int64(1), "city": "Cusco", "run": int64(1)}}) // too late: run 2 is applied
	run()

	got, err := status.Gather(ctx, s.e.BQ, s.e.Loc, flows)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Flows) != 1 {
		t.Fatalf("flows = %+v", got.Flows)
	}
	f := got.Flows[0]
	if f.Flow != "extracts" || f.Kind != "snapshot" || f.Source != "cdc.extracts" || f.LagSeconds != -1 || f.TailRows != 0 ||
		f.LastRun == nil || f.LastRun.AppliedVersion != "2" || f.LastRun.RowsSkipped != 1 || f.LastCompactedAt.IsZero() {
		t.Errorf("snapshot flow status: %+v (last run %+v)", f, f.LastRun)
	}
	if problems := status.Check(&got, status.Thresholds{MaxLag: time.Second, MaxTail: 0, MaxCompactionAge: time.Hour, MaxDeadLetters: 0}); len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	// The gauge an alert watches says the same.
	series, err := mp.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var skipped []float64
	for _, m := range series {
		if m.Name == metrics.CompactionSnapshotRowsSkipped && m.Attributes["flow"] == "extracts" && m.Value != nil {
			skipped = append(skipped, *m.Value)
		}
	}
	if fmt.Sprint(skipped) != "[1]" {
		t.Errorf("%s = %v, want [1]", metrics.CompactionSnapshotRowsSkipped, skipped)
	}
	view, err := s.e.Query("SELECT flow, source, kind, last_run_applied_version, last_run_snapshot_rows_skipped FROM `snapshot-status.cdc._bqcdc_status`")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(view) != "[map[flow:extracts kind:snapshot last_run_applied_version:2 last_run_snapshot_rows_skipped:1 source:cdc.extracts]]" {
		t.Errorf("%s = %v", catalog.StatusView, view)
	}
}

// TestSnapshotSettle: a snapshot written in two parts. While the table was
// modified within SnapshotSettle, compaction applies every version but the
// newest, so the second part is applied with the first; without the guard
// the first part alone is applied and the second is skipped as late. The
// views show every version all along.
func TestSnapshotSettle(t *testing.T) {
	cols := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "city", Type: schema.String}, {Name: "run", Type: schema.Int64}}
	row := func(id int64, city string, run int64) map[string]bigquery.Value {
		return map[string]bigquery.Value{"id": id, "city": city, "run": run}
	}
	version := func(v any) bigquery.Value {
		if v == nil {
			return nil
		}
		return int64(v.(float64))
	}
	for _, guard := range []bool{true, false} {
		t.Run(fmt.Sprint("guard=", guard), func(t *testing.T) {
			table := fmt.Sprintf("parts%v", guard)
			s := newSnapshotEnv(t, testenv.Project("snapshot-settle", map[bool]int64{true: 1, false: 0}[guard]), table, cols,
				fmt.Sprintf("CREATE FLOW settle AS AUTO CDC FROM SNAPSHOT INTO settle_history FROM cdc.%s KEYS (id) VERSION BY run STORED AS SCD TYPE 2;\n", table))
			s.settle = -1
			if guard {
				s.settle = time.Hour
			}
			ctx := context.Background()
			// Each run's clock is a few minutes after the table's last
			// modification (the emulator may not move it on inserts: read
			// it anyway), then long after it for the last.
			at := func(after time.Duration) {
				md, err := s.table.Metadata(ctx)
				if err != nil {
					t.Fatal(err)
				}
				s.clock = md.LastModifiedTime.Add(after - time.Minute) // compact adds a minute
			}

			s.load(t, []map[string]bigquery.Value{row(1, "Lima", 1), row(2, "Quito", 1)})
			at(time.Minute)
			r := s.compact(t)
			if guard && r.Outcome != compact.Settling {
				t.Errorf("first run, one version, within the settle time: %+v, want settling", r)
			}
			if !guard && r.Outcome != compact.Compacted {
				t.Errorf("first run without the guard: %+v, want compacted", r)
			}
			s.expect(t, expectedLines(s.b, []map[string]any{
				{"id": 1.0, "city": "Lima", "__START_AT": 1.0}, {"id": 2.0, "city": "Quito", "__START_AT": 1.0},
			}, version), "run 1")

			// Run 2, first part: key 2 is not in it (yet).
			s.load(t, []map[string]bigquery.Value{row(1, "Cusco", 2)})
			at(2 * time.Minute)
			r = s.compact(t)
			if guard && (r.Outcome != compact.Compacted || r.AppliedVersion != "1") {
				t.Errorf("second run within the settle time: %+v, want run 1 applied, run 2 left", r)
			}
			if !guard && (r.Outcome != compact.Compacted || r.AppliedVersion != "2") {
				t.Errorf("second run without the guard: %+v, want run 2 applied", r)
			}
			// Run 2, second part.
			s.load(t, []map[string]bigquery.Value{row(2, "Quito", 2)})
			at(3 * time.Minute)
			third := s.compact(t)
			at(2 * time.Hour)
			r = s.compact(t)
			whole := expectedLines(s.b, []map[string]any{
				{"id": 1.0, "city": "Lima", "__START_AT": 1.0, "__END_AT": 2.0}, {"id": 1.0, "city": "Cusco", "__START_AT": 2.0},
				{"id": 2.0, "city": "Quito", "__START_AT": 1.0},
			}, version)
			if guard {
				if r.Outcome != compact.Compacted || r.AppliedVersion != "2" || r.RowsSkipped != 0 {
					t.Errorf("run after the settle time: %+v, want run 2 applied whole, nothing skipped", r)
				}
				s.expect(t, whole, "run 2 written in two parts, settled")
				return
			}
			// The hazard the guard prevents: key 2 deleted at run 2, and
			// its row of run 2 skipped.
			if third.RowsSkipped != 1 {
				t.Errorf("without the guard: %+v, want the second part's row skipped", third)
			}
			if d := cmp.Diff(whole, s.view(t)); d == "" {
				t.Error("without the guard the split snapshot came out whole: the test no longer shows the hazard")
			}
		})
	}
}
