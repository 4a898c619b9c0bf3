package cost

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// The flows of sql/render/testdata/flows.sql, bound as sql/render's tests
// bind them (to the schemas of package rendercases).
func renderFlows(t *testing.T) []*flow.Bound {
	t.Helper()
	var out []*flow.Bound
	for _, b := range rendercases.Flows(t, "../../sql/render/testdata") {
		if !b.IsSnapshot() && b.StateBuckets == 0 { // snapshot flows and states of buckets: their own layouts
			out = append(out, b)
		}
	}
	if len(out) != 9 {
		t.Fatalf("%d change-stream flows in sql/render/testdata/flows.sql, want 9", len(out))
	}
	return out
}

var (
	renderLoc = catalog.Location{Project: "my-project", DefaultDataset: "cdc"}
	// The run of sql/render's golden files.
	renderRun = render.Run{
		Watermark: time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), FoldedMax: time.Date(2026, 11, 30, 7, 9, 0, 123456000, time.UTC),
		Generation: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), NewWatermark: time.Date(2026, 11, 30, 7, 50, 0, 0, time.UTC),
		TombstoneCutoff: time.Date(2026, 10, 31, 8, 0, 0, 0, time.UTC), Cutoff: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		ChangesFrom: time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC),
	}
	historyFrom = time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	historyTo   = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
)

const (
	testKeys     = 10_000
	testBlock    = 64 << 10
	eventsPerKey = 10
)

// flowModel is a model of b's tables: the changelog over 3.4 days
// (partitioned and clustered by _cdc_ingested_at), the state (every key's
// events sorted by the first key, a marker) and the change table (3.4 days
// of changes and 100 markers), in 64 KiB blocks.
type flowModel struct {
	*Model
	changelog, state, changes *Table
	// history: the state's blocks of an SCD 1 flow's history
	// (render.HistoryKept: a month of it and its marker), which only _at
	// reads; levels: the others.
	history, levels int
}

func newFlowModel(t *testing.T, b *flow.Bound) flowModel {
	t.Helper()
	shape := Shape{Len: 10, Elems: 2}
	changelog := NewTable(Name(renderLoc.ChangelogTable(b.Flow)), Columns(b.Changelog, nil, shape), catalog.ColIngestedAt, catalog.ColIngestedAt)
	if err := changelog.AddTimeRange(historyFrom, historyTo, testKeys*eventsPerKey, testBlock); err != nil {
		t.Fatal(err)
	}
	// The state as maintenance left it the day before: one partition (of
	// its generation's day), sorted by the first key, and its marker.
	state := NewTable(Name(renderLoc.StateTable(b.Flow)), Columns(plan.For(b, renderLoc).StateColumns(), nil, shape), catalog.ColStateGen, b.Keys[0].Name)
	folded := DayOf(time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC))
	if err := state.AddSpan(folded, Null, Null, 1, testBlock); err != nil { // the marker
		t.Fatal(err)
	}
	if err := state.AddSpan(folded, Int(0), Int(testKeys-1), testKeys*eventsPerKey, testBlock); err != nil {
		t.Fatal(err)
	}
	levels := len(state.Blocks)
	if render.HistoryKept(b) {
		month := DayOf(render.HistoryGen.AddDate(0, 0, 323))                                      // November 2026's
		if err := state.AddSpan(DayOf(render.HistoryGen), Null, Null, 1, testBlock); err != nil { // its marker
			t.Fatal(err)
		}
		if err := state.AddSpan(month, Int(0), Int(testKeys-1), testKeys*eventsPerKey, testBlock); err != nil {
			t.Fatal(err)
		}
	}
	m := flowModel{Model: NewModel(changelog, state), changelog: changelog, state: state, levels: levels, history: len(state.Blocks) - levels}
	if b.Kind().ChangeFeed() {
		m.changes = NewTable(Name(renderLoc.ChangesTable(b.Flow)), Columns(plan.For(b, renderLoc).ChangeColumns(), nil, shape), catalog.ColCommitPosition, catalog.ColCommitPosition)
		if err := m.changes.AddTimeRange(historyFrom, historyTo, testKeys*eventsPerKey*2, testBlock); err != nil {
			t.Fatal(err)
		}
		if err := m.changes.AddSpan(Partition{Null: true}, Null, Null, 100, testBlock); err != nil {
			t.Fatal(err)
		}
		m.Tables[m.changes.Name] = m.changes
	}
	return m
}

// blocksWhere counts tb's blocks whose clustering range meets [lo, hi].
func blocksWhere(tb *Table, lo, hi time.Time) int {
	n := 0
	for _, b := range tb.Blocks {
		if b.Min.IsNull() {
			continue
		}
		if b.Max.i >= lo.UnixMicro() && b.Min.i <= hi.UnixMicro() {
			n++
		}
	}
	return n
}

func names(cols schema.Columns, extra ...string) []string {
	return append(cols.Names(), extra...)
}

// sameColumns compares column lists as sets.
func sameColumns(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

func tableNames(s Statement) []string {
	var out []string
	for _, u := range s.Tables {
		tag := ""
		if u.Target {
			tag = " (target)"
		}
		out = append(out, u.Table+tag)
	}
	slices.Sort(out)
	return out
}

func one(t *testing.T, m *Model, sql string, err error) Statement {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	e, err := m.Estimate(sql)
	if err != nil {
		t.Fatalf("%v in:\n%s", err, sql)
	}
	if len(e.Statements) != 1 {
		t.Fatalf("%d statements, want 1", len(e.Statements))
	}
	return e.Statements[0]
}

// Every statement a run of each test flow executes reads the tables and
// columns the compaction's design says, pruned as it says.
func TestRendererStatements(t *testing.T) {
	for _, b := range renderFlows(t) {
		t.Run(b.Name, func(t *testing.T) {
			m := newFlowModel(t, b)
			c := plan.For(b, renderLoc).Compaction()
			cl, st := m.changelog.Name, m.state.Name
			events := catalog.EventColumns(b)
			afterWatermark := blocksWhere(m.changelog, renderRun.Watermark.Add(time.Microsecond), historyTo)
			inRun := blocksWhere(m.changelog, renderRun.Watermark.Add(time.Microsecond), renderRun.NewWatermark)

			// Statistics: the changelog after the watermark and the change
			// table's markers; no state.
			sql, err := c.Stats(renderRun)
			s := one(t, m.Model, sql, err)
			wantTables := []string{cl}
			if m.changes != nil {
				wantTables = append(wantTables, m.changes.Name)
			}
			slices.Sort(wantTables)
			if got := tableNames(s); !slices.Equal(got, wantTables) {
				t.Errorf("stats reads %v, want %v", got, wantTables)
			}
			if u := s.Table(cl); u.BlocksKept != afterWatermark {
				t.Errorf("stats keeps %d changelog blocks, want the %d after the watermark", u.BlocksKept, afterWatermark)
			}
			for _, col := range s.Table(cl).Columns {
				if col != catalog.ColIngestedAt && col != catalog.ColSourceTS && b.Keys.Index(col) < 0 && b.Sequence.Index(col) < 0 && !strings.Contains(b.Truncate+b.Where, col) {
					t.Errorf("stats reads changelog column %s", col)
				}
			}
			if m.changes != nil {
				if u := s.Table(m.changes.Name); u.BlocksKept != 1 || !sameColumns(u.Columns, []string{catalog.ColCommitPosition, catalog.ColStateWatermark}) {
					t.Errorf("stats reads of the change table %v in %d blocks, want the markers' block", u.Columns, u.BlocksKept)
				}
			}

			// The fold: the run's changelog rows; the state written, not read.
			sql, err = c.Fold(renderRun)
			s = one(t, m.Model, sql, err)
			if got, want := tableNames(s), sorted(cl, st+" (target)"); !slices.Equal(got, want) {
				t.Errorf("fold reads %v, want %v", got, want)
			}
			if u := s.Table(cl); u.BlocksKept != inRun {
				t.Errorf("fold keeps %d changelog blocks, want the %d in (watermark, new watermark]", u.BlocksKept, inRun)
			}
			if u := s.Table(st); u.ScannedBytes != 0 {
				t.Errorf("fold reads %d bytes of the state", u.ScannedBytes)
			}
			for _, col := range s.Table(cl).Columns {
				if events.Index(col) < 0 && !strings.Contains(b.Delete+b.Truncate+b.Where, col) {
					t.Errorf("fold reads changelog column %s, which is no event column", col)
				}
			}

			// A state of versions' reads also read its sparse rows' bases.
			var base []string
			if len(render.SparseColumns(b)) > 0 && slices.ContainsFunc(m.state.Columns, func(c Column) bool { return c.Name == catalog.ColStateBase }) {
				base = []string{catalog.ColStateBase}
			}
			// Maintenance: every event of the state, once a day.
			sql, err = c.Maintain(renderRun)
			s = one(t, m.Model, sql, err)
			if u := s.Table(st); u.BlocksKept != m.levels || !sameColumns(u.Columns, names(events, append(base, catalog.ColStateOp, catalog.ColStateGen)...)) {
				t.Errorf("maintenance reads %v in %d of %d state blocks, want every event column, __op and __gen in the %d of its levels", u.Columns, u.BlocksKept, len(m.state.Blocks), m.levels)
			}
			e, err := m.Estimate(mustSQL(t)(c.MaintainGC(renderRun)))
			if err != nil {
				t.Fatal(err)
			}
			// It deletes whole days of the state's partitions: free.
			if u := e.Statements[0].Table(st); !u.Target || u.RewriteBytes != 0 || u.BilledBytes != 0 {
				t.Errorf("maintenance's DELETE: %+v; whole partitions are deleted without billing", u)
			}
			if m.changes != nil {
				if len(e.Statements) != 2 {
					t.Fatalf("maintenance's clean-up: %d statements, want 2", len(e.Statements))
				}
				if u := e.Statements[1].Table(m.changes.Name); u.BlocksKept != 1 || u.RewriteBytes != int64(math.Ceil(100*m.changes.RowBytes())) {
					t.Errorf("deleting the change table's old markers: %+v; want the NULL partition only", u)
				}
			}

			// Expiring the changelog at a day boundary drops whole partitions.
			sql, err = c.ExpireChangelog(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
			if s = one(t, m.Model, sql, err); s.Billed != 0 {
				t.Errorf("expiring whole changelog days billed %d: %s", s.Billed, s.Summary())
			}

			// The view: the changelog after its bound, the whole state.
			sql, err = viewSQL(b, renderLoc, renderRun.NewWatermark)
			s = one(t, m.Model, sql, err)
			if u := s.Table(cl); u.BlocksKept != blocksWhere(m.changelog, renderRun.NewWatermark.Add(time.Microsecond), historyTo) {
				t.Errorf("the view keeps %d changelog blocks", u.BlocksKept)
			}
			if u := s.Table(st); u.BlocksKept != m.levels {
				t.Errorf("the view keeps %d of %d state blocks, want its levels' %d", u.BlocksKept, len(m.state.Blocks), m.levels)
			}

			if m.changes == nil {
				return
			}
			// The change feed's run: the run's changelog rows and the state
			// blocks of the touched keys (7 and 10..20: the first block).
			run := renderRun
			run.Keys = &render.KeyFilter{Lo: []any{int64(7), int64(10)}, Hi: []any{int64(7), int64(20)}}
			sql, err = c.Changes(run)
			s = one(t, m.Model, sql, err)
			if got, want := tableNames(s), sorted(cl, m.changes.Name+" (target)", st); !slices.Equal(got, want) {
				t.Errorf("the change feed's run reads %v, want %v", got, want)
			}
			wantState := 1 // keys 7..20 lie in the first block of keys
			if b.Truncate != "" {
				wantState = 2 // and the NULL keys' (the marker's) block
			}
			read := append(base, catalog.ColStateOp)
			if m.history > 0 {
				read = append(read, catalog.ColStateGen) // the filter that leaves the history out
			}
			if u := s.Table(st); u.BlocksKept != wantState || !sameColumns(u.Columns, names(events, read...)) {
				t.Errorf("the change feed's run reads %v in %d of %d state blocks, want event columns and __op in %d", u.Columns, u.BlocksKept, len(m.state.Blocks), wantState)
			}
			if u := s.Table(cl); u.BlocksKept != inRun {
				t.Errorf("the change feed's run keeps %d changelog blocks, want %d", u.BlocksKept, inRun)
			}
			run.Keys = nil // every key
			sql, err = c.Changes(run)
			if u := one(t, m.Model, sql, err).Table(st); u.BlocksKept != m.levels {
				t.Errorf("without a key filter the change feed's run keeps %d of %d state blocks, want its levels' %d", u.BlocksKept, len(m.state.Blocks), m.levels)
			}

			// Reading the feed: the markers and the range's blocks.
			from := historyTo.Add(-5 * time.Minute)
			sql, err = plan.For(b, renderLoc).ChangesQuery(from, time.Time{})
			s = one(t, m.Model, sql, err)
			if u := s.Table(m.changes.Name); u.BlocksKept != 1+blocksWhere(m.changes, from.Add(time.Microsecond), historyTo) || len(s.Tables) != 1 {
				t.Errorf("reading the last 5 minutes of the feed: %s", s.Summary())
			}

			// Table functions' DDL is free; its body reads what a call reads:
			// the whole state, and the changelog whole (a target of one row
			// per key) or after the functions' bound (a target of versions,
			// whose state keeps every event).
			p := plan.For(b, renderLoc)
			fns, err := p.Functions(renderRun.Watermark)
			if err != nil || fns[0].Name != catalog.AtFunctionName(b.Flow) {
				t.Fatalf("the first table function: %v %v", fns, err)
			}
			s = one(t, m.Model, fns[0].DDL, nil)
			wantCl, wantSt := len(m.changelog.Blocks), len(m.state.Blocks)
			if p.FunctionsBounded() {
				wantCl = blocksWhere(m.changelog, renderRun.Watermark.Add(time.Microsecond), historyTo)
			}
			if m.history > 0 {
				wantSt = m.history // an SCD 1 flow's: its history only, marker included
			}
			if s.Billed != 0 || s.Body == nil || s.Body.Table(cl).BlocksKept != wantCl || s.Body.Table(st).BlocksKept != wantSt {
				t.Errorf("<target>_at: %+v (want %d changelog blocks, %d state blocks)", s, wantCl, wantSt)
				if s.Body != nil {
					t.Logf("%s", s.Body.Summary())
				}
			}
		})
	}
}

// The marker read (a run without labels) keeps to the state's blocks of
// NULL keys: markers carry no key, and the first key is the first
// clustering column.
func TestMarkerReadsTheNullBlocks(t *testing.T) {
	b := renderFlows(t)[0]
	m := newFlowModel(t, b)
	sql, err := plan.For(b, renderLoc).Compaction().Marker()
	s := one(t, m.Model, sql, err)
	u := s.Table(m.state.Name)
	if u.BlocksKept != 1 || !sameColumns(u.Columns, []string{b.Keys[0].Name, catalog.ColIngestedAt, catalog.ColStateOp, catalog.ColStateGen, catalog.ColStateWatermark}) {
		t.Errorf("marker: %s", s.Summary())
	}
}

func mustSQL(t *testing.T) func(string, error) string {
	return func(sql string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return sql
	}
}

// Every statement of the golden files (each flow's view, compaction
// statements and table functions as sql/render renders them) is one the
// model reads, the snapshot flows' included.
func TestGoldenStatementsEstimate(t *testing.T) {
	flows := map[string]*flow.Bound{}
	for _, b := range renderFlows(t) {
		flows[b.Name] = b
	}
	for name, b := range flows {
		m := newFlowModel(t, b)
		if b.Bitemporal { // <target>_as_of reads the view
			m.Views[Name(renderLoc.ViewTable(b.Flow))] = mustSQL(t)(viewSQL(b, renderLoc, renderRun.Watermark))
		}
		golden := mustSQL(t)(readFile("../../sql/render/testdata/golden/" + name + ".sql"))
		e, err := m.Estimate(golden)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(e.Statements) < 8 {
			t.Errorf("%s: %d statements", name, len(e.Statements))
		}
		for i, s := range e.Statements {
			if s.Kind == "" || s.Kind == "DDL" && s.Body == nil {
				t.Errorf("%s statement %d: %+v", name, i+1, s)
			}
			t.Logf("%s %d: %s", name, i+1, s.Summary())
		}
	}
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return string(b), nil
}

// viewSQL is flow b's view as its plan renders it with hint.
func viewSQL(b *flow.Bound, loc catalog.Location, hint time.Time) (string, error) {
	v, err := plan.For(b, loc).View(hint, nil)
	return v.SQL, err
}

// A state of buckets (flow.StateBucketsProperty): the change feed's run
// reads the partitions of its buckets and the NULL partition (truncates)
// only, however large the blocks; the marker read, the NULL partition;
// maintenance's DELETE of the folded levels is billed for the whole state
// (it is partitioned by key, not by generation).
func TestStateOfBucketsPrunesByPartition(t *testing.T) {
	var b *flow.Bound
	for _, f := range rendercases.Flows(t, "../../sql/render/testdata") {
		if f.StateBuckets > 0 && f.Truncate != "" {
			b = f
		}
	}
	if b == nil || b.Truncate == "" {
		t.Fatal("sql/render/testdata/flows.sql has no flow with a state of buckets and truncates")
	}
	m := newFlowModel(t, b)
	// The same rows, in one partition per bucket, each bucket's keys spread
	// over the whole key range, in blocks of 256 MiB.
	st := NewTable(m.state.Name, m.state.Columns, catalog.ColStateBucket, b.Keys[0].Name)
	if err := st.AddSpan(Partition{Null: true}, Null, Null, 1, 256<<20); err != nil {
		t.Fatal(err)
	}
	for k := range int64(b.StateBuckets) {
		if err := st.AddSpan(Partition{Day: k}, Int(0), Int(testKeys-1), testKeys/int64(b.StateBuckets)+1, 256<<20); err != nil {
			t.Fatal(err)
		}
	}
	m.Tables[st.Name] = st
	c := plan.For(b, renderLoc).Compaction()
	run := renderRun
	run.Keys = &render.KeyFilter{Lo: []any{int64(7), int64(10)}, Hi: []any{int64(7), int64(20)}, Buckets: []int64{5, 17, 3998}}
	s := one(t, m.Model, mustSQL(t)(c.Changes(run)), nil)
	if u := s.Table(st.Name); u.BlocksKept != 4 {
		t.Errorf("the change feed's run keeps %d of %d state blocks, want its 3 buckets' and the NULL partition's", u.BlocksKept, len(st.Blocks))
	}
	s = one(t, m.Model, mustSQL(t)(c.Marker()), nil)
	if u := s.Table(st.Name); u.BlocksKept != 1 {
		t.Errorf("the marker read keeps %d state blocks, want the NULL partition's", u.BlocksKept)
	}
	e, err := m.Estimate(mustSQL(t)(c.MaintainGC(renderRun)))
	if err != nil {
		t.Fatal(err)
	}
	if u := e.Statements[0].Table(st.Name); u.RewriteBytes < int64(st.Bytes())*9/10 {
		t.Errorf("maintenance's DELETE of a state of buckets: %+v; want the whole state billed", u)
	}
}
