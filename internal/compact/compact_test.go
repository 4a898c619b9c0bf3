package compact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/sql/render"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func us(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// compactor returns a compactor over fake at a clock the test moves.
func compactor(fake *fakeBQ, now *time.Time, opts Options) *Compactor {
	opts.Now = func() time.Time { return *now }
	opts.VisibilityLag = 10 * time.Second
	opts.Backoff = time.Millisecond
	return NewWith(fake, fake, testLoc, opts)
}

// changed scripts a flow's statistics: n new events after the watermark.
func changed(fake *fakeBQ, table string, n int64, newest time.Time, keys ...int64) {
	lo := make([]bigquery.Value, len(keys))
	for i, k := range keys {
		lo[i] = k
	}
	fake.stats["`"+table+"`"] = map[string]bigquery.Value{"events": n, "unfolded": n, "keys": int64(len(keys)), "newest": newest,
		"key_lo": lo, "key_hi": lo, "key_nulls": int64(0), "changes_until": nil}
}

func outcomes(reports []Report) []string {
	var out []string
	for _, r := range reports {
		out = append(out, r.Flow+" "+r.Outcome)
	}
	slices.Sort(out)
	return out
}

// A first run of a changed flow creates its state (and change table),
// reads the statistics, folds and materializes the change feed; it moves
// the view's bound to the new watermark and labels the state. A second run
// with nothing new is one query, and maintains the state (folds its levels:
// the first had none before it); a third, with the changelog's metadata
// unchanged, none; a run a day after the maintenance maintains again.
func TestRunsOfOneFlow(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	now := t0
	c := compactor(fake, &now, Options{})
	changed(fake, "src0_changelog", 3, t0.Add(-time.Minute), 1, 2)
	fake.first = t0.Add(-time.Minute)

	// The feed was never materialized: its first run reads where the
	// flow's events start.
	reports := c.Run(context.Background(), bound)
	if reports[0].Outcome != Compacted || reports[0].Maintained {
		t.Fatalf("first run: %+v", reports[0])
	}
	if d := cmp.Diff([]string{"stats", "fold", "first", "changes"}, fake.kinds()); d != "" {
		t.Errorf("statements of the first run (-want +got):\n%s", d)
	}
	if reports[0].Jobs != 4 {
		t.Errorf("jobs = %d, want 4", reports[0].Jobs)
	}
	w := t0.Add(-10 * time.Second)
	if d := cmp.Diff([]string{"f0@" + w.Format(time.RFC3339)}, fake.views); d != "" {
		t.Errorf("views (-want +got):\n%s", d)
	}
	l := fake.labels("cdc.t0__state")
	if l[catalog.LabelWatermark] != us(w) || l[catalog.LabelMaintained] != "" || l[catalog.StateLayoutLabel] != catalog.StateLayout {
		t.Errorf("labels after the first run: %v", l)
	}
	// The change feed's run reads the state of the touched keys only.
	if q := fake.queries[3]; !strings.Contains(q, "`id` IN (1, 2)") {
		t.Errorf("the change feed's statement does not filter the state by the touched keys:\n%s", q)
	}

	// Nothing new: the statistics say so, no fold; the view is not touched
	// again; the levels are folded (never done before).
	fake.reset()
	now = t0.Add(time.Hour)
	fake.stats["`src0_changelog`"] = map[string]bigquery.Value{"events": int64(0), "unfolded": int64(0), "changes_until": w}
	reports = c.Run(context.Background(), bound)
	if reports[0].Outcome != UpToDate || reports[0].Jobs != 3 || !reports[0].Maintained {
		t.Fatalf("second run: %+v", reports[0])
	}
	if d := cmp.Diff([]string{"stats", "maintain", "maintain_gc"}, fake.kinds()); d != "" {
		t.Errorf("statements of the second run (-want +got):\n%s", d)
	}
	if len(fake.views) != 0 {
		t.Errorf("views updated with nothing new: %v", fake.views)
	}
	if l := fake.labels("cdc.t0__state"); l[catalog.LabelMaintained] != us(now) {
		t.Errorf("maintenance not labelled: %v", l)
	}

	// The changelog's metadata is unchanged and the last run left it clean.
	fake.reset()
	now = t0.Add(2 * time.Hour)
	reports = c.Run(context.Background(), bound)
	if reports[0].Outcome != Idle || reports[0].Jobs != 0 || len(fake.queries) != 0 {
		t.Fatalf("third run: %+v, queries %v", reports[0], fake.kinds())
	}

	// A day after the last maintenance the next run with changes maintains.
	fake.reset()
	now = t0.Add(23 * time.Hour)
	fake.tables["cdc.src0_changelog"].NumRows = 15
	changed(fake, "src0_changelog", 1, now.Add(-time.Minute), 7)
	if reports = c.Run(context.Background(), bound); reports[0].Maintained {
		t.Errorf("maintained 22 hours after the last time")
	}
	fake.reset()
	now = t0.Add(25 * time.Hour)
	fake.tables["cdc.src0_changelog"].NumRows = 20
	changed(fake, "src0_changelog", 1, now.Add(-time.Minute), 7)
	reports = c.Run(context.Background(), bound)
	if !reports[0].Maintained {
		t.Errorf("no maintenance a day after the last: %v", fake.kinds())
	}
}

// The run reads from the watermark its labels record; a state table
// without labels starts from its newest marker, and an empty one from the
// start.
func TestWhereARunStarts(t *testing.T) {
	for _, tt := range []struct {
		name   string
		state  *bigquery.TableMetadata
		marker time.Time
		want   []string // statements
		from   time.Time
	}{
		{"no state table", nil, time.Time{}, []string{"stats"}, time.Unix(0, 0)},
		{"empty state", &bigquery.TableMetadata{Labels: map[string]string{catalog.StateLayoutLabel: catalog.StateLayout}}, time.Time{}, []string{"stats"}, time.Unix(0, 0)},
		{"labels", &bigquery.TableMetadata{NumRows: 5, Labels: map[string]string{catalog.StateLayoutLabel: catalog.StateLayout,
			catalog.LabelWatermark: us(t0.Add(-time.Hour)), catalog.LabelFoldedMax: us(t0.Add(-time.Hour))}}, time.Time{}, []string{"stats"}, t0.Add(-time.Hour)},
		{"no labels", &bigquery.TableMetadata{NumRows: 5, Labels: map[string]string{catalog.StateLayoutLabel: catalog.StateLayout}},
			t0.Add(-2 * time.Hour), []string{"marker", "stats"}, t0.Add(-2 * time.Hour)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			bound := testFlows(t, fake, 1, 2)
			if tt.state != nil {
				fake.tables["cdc.t0__state"] = tt.state
			}
			if !tt.marker.IsZero() {
				fake.marker["`t0__state`"] = map[string]bigquery.Value{"__watermark": tt.marker, "folded_max": tt.marker, "__gen": tt.marker}
			}
			fake.stats["`src0_changelog`"] = map[string]bigquery.Value{"events": int64(0), "unfolded": int64(0), "changes_until": tt.from}
			now := t0
			c := compactor(fake, &now, Options{MaintainEvery: -1})
			reports := c.Run(context.Background(), bound)
			if reports[0].Outcome != UpToDate {
				t.Fatalf("%+v", reports[0])
			}
			if d := cmp.Diff(tt.want, fake.kinds()); d != "" {
				t.Errorf("statements (-want +got):\n%s", d)
			}
			stats := fake.queries[len(fake.queries)-1]
			if lit := "`_cdc_ingested_at` > TIMESTAMP '" + tt.from.UTC().Format("2006-01-02 15:04:05") + "+00:00'"; !strings.Contains(stats, lit) {
				t.Errorf("the statistics do not read from %s:\n%s", tt.from, stats)
			}
		})
	}
}

// A crash after any step leaves the labels as they were: the next run
// reads from the same watermark, and folds the same rows again (a level
// counted once).
func TestCrashAfterAStepRunsAgainFromTheLabels(t *testing.T) {
	for _, step := range []string{StepFold, StepChanges, StepGC, StepView} {
		t.Run(step, func(t *testing.T) {
			fake := newFake()
			bound := testFlows(t, fake, 1, 1)
			// A flow folded before (so the run maintains too).
			fake.tables["cdc.t0__state"] = &bigquery.TableMetadata{NumRows: 1, Labels: map[string]string{
				catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(t0.Add(-time.Hour)), catalog.LabelFoldedMax: us(t0.Add(-time.Hour))}}
			now := t0
			crash := true
			c := compactor(fake, &now, Options{AfterStep: func(_, s string) error {
				if crash && s == step {
					return errors.New("injected crash")
				}
				return nil
			}})
			changed(fake, "src0_changelog", 2, t0.Add(-time.Minute), 1)
			rep := c.Run(context.Background(), bound)[0]
			if rep.Outcome != Failed || !strings.Contains(rep.Error, "injected crash") {
				t.Fatalf("%+v", rep)
			}
			if l := fake.labels("cdc.t0__state"); l[catalog.LabelWatermark] != us(t0.Add(-time.Hour)) {
				t.Fatalf("labels moved by a crashed run: %v", l)
			}
			crash = false
			fake.reset()
			now = now.Add(time.Second)
			rep = c.Run(context.Background(), bound)[0]
			if rep.Outcome != Compacted {
				t.Fatalf("re-run: %+v", rep)
			}
			if !strings.Contains(fake.queries[0], "`_cdc_ingested_at` > TIMESTAMP '2026-12-01 11:00:00+00:00'") {
				t.Errorf("the re-run does not read from the labelled watermark:\n%s", fake.queries[0])
			}
		})
	}
}

// A failing flow fails alone; transient errors are retried, each attempt a
// job; a permanent one is not.
func TestFailuresStayWithTheirFlow(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 3, 1)
	for i := range 3 {
		changed(fake, "src"+strconv.Itoa(i)+"_changelog", 1, t0.Add(-time.Minute), 1)
	}
	fake.fail["INSERT INTO `p`.`cdc`.`t1__state`"] = failure{err: errPermanent, times: -1}
	fake.fail["INSERT INTO `p`.`cdc`.`t2__state`"] = failure{err: errTransient, times: 2}
	now := t0
	reports := compactor(fake, &now, Options{MaintainEvery: -1}).Run(context.Background(), bound)
	if d := cmp.Diff([]string{"f0 compacted", "f1 failed", "f2 compacted"}, outcomes(reports)); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	for _, r := range reports {
		switch r.Flow {
		case "f1":
			if r.Jobs != 2 || !strings.Contains(r.Error, "invalid query") {
				t.Errorf("f1: %d jobs (want 2: statistics, one fold), error %q", r.Jobs, r.Error)
			}
		case "f2":
			if r.Jobs != 6 {
				t.Errorf("f2: %d jobs, want 6 (statistics, three fold attempts, the feed's first position, the change feed)", r.Jobs)
			}
		}
	}
}

// Flows run longest waiting first, and once the budget is spent the rest
// are deferred (and go first next time).
func TestBudgetDefersTheRest(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 4, 1)
	for i, table := range []string{"t0__state", "t1__state", "t2__state", "t3__state"} {
		changed(fake, "src"+strconv.Itoa(i)+"_changelog", 1, t0.Add(-time.Minute), 1)
		// f3 was checked longest ago, then f2, f1, f0.
		fake.tables["cdc."+table] = &bigquery.TableMetadata{NumRows: 1, Labels: map[string]string{
			catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(t0.Add(-time.Hour)), catalog.LabelFoldedMax: us(t0.Add(-time.Hour)),
			catalog.LabelChecked: us(t0.Add(-time.Duration(i) * time.Minute))}}
	}
	now := t0
	var order []string
	c := compactor(fake, &now, Options{Concurrency: 1, Budget: 2 * time.Second, MaintainEvery: -1, AfterStep: func(f, step string) error {
		if step == StepFold {
			order = append(order, f)
			now = now.Add(time.Second) // each flow takes a second
		}
		return nil
	}})
	reports := c.Run(context.Background(), bound)
	if d := cmp.Diff([]string{"f3", "f2"}, order); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"f0 deferred", "f1 deferred", "f2 compacted", "f3 compacted"}, outcomes(reports)); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
}

// A selection of one shard runs the flows of its sources only, and names
// select flows (each once).
func TestShardsAndNames(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 8, 1)
	now := t0
	c := compactor(fake, &now, Options{MaintainEvery: -1})
	for shard := range 3 {
		reports, err := c.Compact(context.Background(), Selection{Flows: bound, Shard: shard, Shards: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			if got := ShardOf(r.Source, 3); got != shard {
				t.Errorf("shard %d ran %s of shard %d", shard, r.Flow, got)
			}
		}
	}
	reports, err := c.Compact(context.Background(), Selection{Flows: bound, Names: []string{"f1", "f1", "f2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 {
		t.Errorf("names f1, f1, f2 ran %d flows, want 2", len(reports))
	}
	if _, err := c.Compact(context.Background(), Selection{Flows: bound, Names: []string{"nope"}}); err == nil {
		t.Error("an unknown name ran")
	}
	for _, tt := range []struct{ shard, shards int }{{0, 0}, {3, 3}, {-1, 2}, {0, MaxShards + 1}} {
		if ValidShards(tt.shard, tt.shards) == nil {
			t.Errorf("shard %d of %d accepted", tt.shard, tt.shards)
		}
	}
}

// The change feed reads the touched keys' state, also when its range
// starts before the run's watermark (a feed that lags) and on its first
// run (the history's keys, read from the changelog), unless the state is
// smaller than the query of its keys.
func TestChangeFeedKeyFilter(t *testing.T) {
	for _, tt := range []struct {
		name      string
		until     any
		bytes     int64 // the state's
		changelog int64 // the changelog's bytes
		empty     bool  // the state holds no row (a new flow's first run)
		filtered  bool
	}{
		{"feed up to the watermark", t0.Add(-time.Hour), DefaultFeedKeysAbove + 1, 0, false, true},
		{"feed lagging (its keys read from the changelog)", t0.Add(-3 * time.Hour), DefaultFeedKeysAbove + 1, 0, false, true},
		{"feed lagging, state smaller than the keys' query", t0.Add(-3 * time.Hour), DefaultFeedKeysAbove, 0, false, false},
		{"feed never materialized", nil, DefaultFeedKeysAbove + 1, 0, false, true},
		{"feed never materialized, state smaller than the keys' query", nil, DefaultFeedKeysAbove, 0, false, false},
		// A new flow over a long changelog: the state is empty when the run
		// starts, and holds the changelog's history once it folded it.
		// (Its slices read their own keys, each found by a statistics query
		// of its own; below FeedKeysAbove, the run's keys: all its history's.)
		{"a new flow's first run over a large changelog", nil, 0, DefaultFeedKeysAbove + 1, true, true},
		{"a new flow's first run over a small changelog", nil, 0, DefaultFeedKeysAbove, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			bound := testFlows(t, fake, 1, 1)
			rows := uint64(1)
			if tt.empty {
				rows = 0
			}
			fake.tables["cdc.t0__state"] = &bigquery.TableMetadata{NumRows: rows, NumBytes: tt.bytes, Labels: map[string]string{
				catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(t0.Add(-time.Hour)), catalog.LabelFoldedMax: us(t0.Add(-time.Hour))}}
			changed(fake, "src0_changelog", 1, t0.Add(-time.Minute), 5)
			if tt.changelog > 0 {
				fake.tables["cdc.src0_changelog"].NumBytes = tt.changelog
			}
			fake.stats["`src0_changelog`"]["changes_until"] = tt.until
			fake.first = t0.Add(-48 * time.Hour) // the flow's first event
			now := t0
			compactor(fake, &now, Options{MaintainEvery: -1}).Run(context.Background(), bound)
			var changes string
			for i, q := range fake.queries {
				if kindOf(fake.steps[i]) == "changes" {
					changes = q
				}
			}
			if got := strings.Contains(changes, "`id` IN (5)"); got != tt.filtered {
				t.Errorf("key filter in the change feed's statement: %v, want %v\n%s", got, tt.filtered, changes)
			}
			if tt.empty {
				stats := 0
				for _, st := range fake.steps {
					if kindOf(st) == "stats" {
						stats++
					}
				}
				if large := tt.changelog > DefaultFeedKeysAbove; (stats > 1) != large {
					t.Errorf("%d statistics queries; want one per slice too: %v", stats, large)
				}
			}
		})
	}
}

// A dry run reads what it would do and prices the statements that write,
// writing nothing: no fold, no label, no view.
func TestDryRunWritesNothing(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	if err := fake.State(context.Background(), bound[0]); err != nil {
		t.Fatal(err)
	}
	md := fake.tables["cdc.t0__state"]
	md.NumRows = 1
	md.Labels[catalog.LabelWatermark], md.Labels[catalog.LabelFoldedMax] = us(t0.Add(-time.Hour)), us(t0.Add(-time.Hour))
	fake.states = nil
	changed(fake, "src0_changelog", 2, t0.Add(-time.Minute), 1)
	now := t0
	priced := map[string]int64{"fold": 11 << 20, "changes": 12 << 20, "maintain": 13 << 20, "maintain_gc": 14 << 20}
	est := estimator(func(st Stmt) (int64, error) { return priced[kindOf(st.Step)], nil })
	// The cost model beside BigQuery's dry run: twice its price, and a
	// failure for maintenance.
	model := estimator(func(st Stmt) (int64, error) {
		if kindOf(st.Step) == "maintain" {
			return 0, fmt.Errorf("model: no table")
		}
		return 2 * priced[kindOf(st.Step)], nil
	})
	rep := compactor(fake, &now, Options{DryRun: est, Model: model}).Run(context.Background(), bound)[0]
	for _, st := range rep.Plan {
		k := kindOf(st.Step)
		switch {
		case st.Ran:
			if st.HasModel {
				t.Errorf("%s ran, yet carries a model estimate", st.Step)
			}
		case k == "maintain":
			if !st.HasModel || st.ModelError == "" {
				t.Errorf("%s: the model's failure is not beside BigQuery's estimate: %+v", st.Step, st)
			}
		case !st.HasModel || st.Model != 2*priced[k] || st.Bytes != priced[k]:
			t.Errorf("%s: BigQuery %d, model %d (%v), want %d and %d", st.Step, st.Bytes, st.Model, st.HasModel, priced[k], 2*priced[k])
		}
	}
	// The reads run (the statistics, the feed's first position), the rest
	// is priced.
	if d := cmp.Diff([]string{"stats", "first"}, fake.kinds()); d != "" {
		t.Errorf("statements run (-want +got):\n%s", d)
	}
	// The plan lists both, in order: the reads it ran (billed) and the
	// statements it priced.
	var steps []string
	for _, st := range rep.Plan {
		steps = append(steps, fmt.Sprintf("%s ran=%v", st.Step, st.Ran))
	}
	want := []string{"stats ran=true", "fold ran=false", "first position ran=true", "changes ran=false", "maintain ran=false", "maintain gc ran=false"}
	if d := cmp.Diff(want, steps); d != "" {
		t.Errorf("plan (-want +got):\n%s", d)
	}
	var billed int64
	for _, st := range rep.Plan {
		billed += st.Bytes
	}
	if rep.BytesBilled != billed || billed < 50<<20 {
		t.Errorf("priced %d bytes, plan sums to %d, want the reads plus %d", rep.BytesBilled, billed, 50<<20)
	}
	if l := fake.labels("cdc.t0__state"); l[catalog.LabelWatermark] != us(t0.Add(-time.Hour)) || len(fake.views) != 0 || len(fake.states) != 0 {
		t.Errorf("a dry run wrote: labels %v, views %v, states %v", l, fake.views, fake.states)
	}
}

type estimator func(st Stmt) (int64, error)

func (e estimator) Estimate(_ context.Context, st Stmt) (int64, error) { return e(st) }

// A feed's first run over a long history catches up a slice at a time
// (each slice one statement with its marker), at most MaxChangeSlices a
// run, and leaves the flow unclean so the next run goes on.
func TestChangeFeedCatchesUpInSlices(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	changed(fake, "src0_changelog", 1, t0.Add(-time.Minute), 5)
	fake.first = t0.Add(-100 * time.Hour)
	now := t0
	c := compactor(fake, &now, Options{MaintainEvery: -1, ChangeSlice: 24 * time.Hour, MaxChangeSlices: 3})
	c.Run(context.Background(), bound)
	var slices []string
	for i, q := range fake.queries {
		if kindOf(fake.steps[i]) == "changes" {
			i := strings.Index(q, "args AS (SELECT ")
			slices = append(slices, q[i+len("args AS (SELECT "):i+len("args AS (SELECT ")+130])
		}
	}
	if len(slices) != 3 {
		t.Fatalf("%d slices in the first run, want 3:\n%s", len(slices), strings.Join(slices, "\n"))
	}
	// Slices end at multiples of their width since the Unix epoch (here
	// midnights), the boundaries within which the fold kept each key's
	// deciding events.
	if !strings.HasPrefix(slices[0], "TIMESTAMP '2026-11-27 07:59:59.999999+00:00' AS __from, TIMESTAMP '2026-11-28 00:00:00+00:00'") ||
		!strings.HasPrefix(slices[1], "TIMESTAMP '2026-11-28 00:00:00+00:00' AS __from, TIMESTAMP '2026-11-29 00:00:00+00:00'") {
		t.Errorf("slices: %s", strings.Join(slices, "\n"))
	}
	for i, q := range fake.queries {
		if kindOf(fake.steps[i]) == "fold" && !strings.Contains(q, "PARTITION BY e.`id`, DIV(UNIX_MICROS(e.`_cdc_ingested_at`) - 1, 86400000000)") {
			t.Errorf("the fold does not keep each slice's deciding events:\n%s", q)
		}
	}
	if l := fake.labels("cdc.t0__state"); l[catalog.LabelClean] != "0" {
		t.Errorf("a feed left behind leaves the flow clean: %v", l)
	}
}

// With ChangeFeedEvery the feed is materialized once it lags that long:
// runs in between fold and leave the flow unclean (not idle).
func TestChangeFeedEvery(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	fake.tables["cdc.t0__state"] = &bigquery.TableMetadata{NumRows: 1, Labels: map[string]string{
		catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(t0.Add(-20 * time.Minute)), catalog.LabelFoldedMax: us(t0.Add(-20 * time.Minute))}}
	changed(fake, "src0_changelog", 1, t0.Add(-time.Minute), 5)
	fake.stats["`src0_changelog`"]["changes_until"] = t0.Add(-20 * time.Minute)
	now := t0
	c := compactor(fake, &now, Options{MaintainEvery: -1, ChangeFeedEvery: time.Hour})
	c.Run(context.Background(), bound)
	if d := cmp.Diff([]string{"stats", "fold"}, fake.kinds()); d != "" {
		t.Errorf("a feed 20 minutes behind with ChangeFeedEvery 1h (-want +got):\n%s", d)
	}
	if l := fake.labels("cdc.t0__state"); l[catalog.LabelClean] != "0" {
		t.Errorf("a lagging feed left the flow clean: %v", l)
	}
	fake.reset()
	fake.stats["`src0_changelog`"]["changes_until"] = t0.Add(-2 * time.Hour)
	fake.tables["cdc.t0__state"].NumBytes = DefaultFeedKeysAbove + 1 // large enough to read the range's keys first
	c.Run(context.Background(), bound)
	// The feed's range starts before the run's watermark: one more
	// statistics query reads the keys of the changelog after its start,
	// and the change statement reads those keys' state only.
	if d := cmp.Diff([]string{"stats", "fold", "stats", "changes"}, fake.kinds()); d != "" {
		t.Errorf("a feed 2 hours behind (-want +got):\n%s", d)
	}
	var feedStats, changes string
	for i, q := range fake.queries {
		switch kindOf(fake.steps[i]) {
		case "stats":
			feedStats = q
		case "changes":
			changes = q
		}
	}
	if !strings.Contains(feedStats, "> "+render.Literal(t0.Add(-2*time.Hour))) {
		t.Errorf("the feed's keys are not read from the start of its range:\n%s", feedStats)
	}
	if !strings.Contains(changes, "`id` IN (5)") {
		t.Errorf("a lagging feed reads every key's state:\n%s", changes)
	}
}

// A flow whose change feed is off (TBLPROPERTIES ('delta.enableChangeDataFeed'
// = 'false')) runs the statistics and the fold only: no state read, and
// it is left clean (nothing lags).
func TestNoChangeFeedReadsNoState(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	bound[0].NoChangeFeed = true
	fake.tables["cdc.t0__state"] = &bigquery.TableMetadata{NumRows: 1, Labels: map[string]string{
		catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(t0.Add(-20 * time.Minute)), catalog.LabelFoldedMax: us(t0.Add(-20 * time.Minute))}}
	changed(fake, "src0_changelog", 1, t0.Add(-time.Minute), 5)
	now := t0
	c := compactor(fake, &now, Options{MaintainEvery: -1})
	c.Run(context.Background(), bound)
	if d := cmp.Diff([]string{"stats", "fold"}, fake.kinds()); d != "" {
		t.Errorf("statements of a flow without a change feed (-want +got):\n%s", d)
	}
	for _, sql := range fake.queries {
		if strings.Contains(sql, "t0__changes") {
			t.Errorf("a statement names the change table:\n%s", sql)
		}
	}
}

// Maintenance reduces events only as of the position the change feed is
// materialized to when the feed is behind the watermark (ChangeFeedEvery,
// or a first materialization of a long history): the feed's later
// positions still need the events before them as baselines, and once
// reduced they would read an update as an insert. A flow without a feed
// reduces as of the watermark.
func TestMaintenanceKeepsWhatALaggingFeedNeeds(t *testing.T) {
	for _, tt := range []struct {
		name         string
		noFeed, held bool
		want         time.Time // the position maintenance reduces as of
	}{
		{"feed 3 hours behind", false, false, t0.Add(-3 * time.Hour)},
		{"no feed", true, false, t0.Add(-20 * time.Minute)},
		{"feed held (off, then on again): rebuilt, not continued", false, true, t0.Add(-20 * time.Minute)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			bound := testFlows(t, fake, 1, 1)
			bound[0].NoChangeFeed = tt.noFeed
			fake.tables["cdc.t0__state"] = &bigquery.TableMetadata{NumRows: 1, Labels: map[string]string{
				catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(t0.Add(-20 * time.Minute)), catalog.LabelFoldedMax: us(t0.Add(-20 * time.Minute))}}
			if tt.held {
				fake.tables["cdc.t0__state"].Labels[catalog.LabelFeedOff] = "1"
			}
			changed(fake, "src0_changelog", 1, t0.Add(-time.Minute), 5)
			fake.stats["`src0_changelog`"]["changes_until"] = t0.Add(-3 * time.Hour)
			now := t0
			c := compactor(fake, &now, Options{MaintainEvery: time.Hour, ChangeFeedEvery: 24 * time.Hour})
			c.Run(context.Background(), bound)
			var maintain string
			for i, q := range fake.queries {
				if kindOf(fake.steps[i]) == "maintain" {
					maintain = q
				}
			}
			if maintain == "" {
				t.Fatalf("no maintenance among %v", fake.kinds())
			}
			kept := "`_cdc_ingested_at` > " + render.Literal(tt.want)
			if !strings.Contains(maintain, kept) {
				t.Errorf("maintenance does not keep the events after %s as they are:\n%s", tt.want, maintain)
			}
		})
	}
}

// A feed turned off labels the state (catalog.LabelFeedOff); turned on
// again it is held (not continued from its old marker, whose later
// positions' baselines maintenance may have reduced away) until its change
// table is empty, and then rebuilt from the flow's first position.
func TestFeedTurnedOnAgainIsRebuilt(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	fake.tables["cdc.t0__state"] = &bigquery.TableMetadata{NumRows: 1, Labels: map[string]string{
		catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(t0.Add(-20 * time.Minute)), catalog.LabelFoldedMax: us(t0.Add(-20 * time.Minute))}}
	now := t0
	c := compactor(fake, &now, Options{MaintainEvery: -1})
	run := func(noFeed bool, changesUntil any) Report {
		t.Helper()
		fake.reset()
		bound[0].NoChangeFeed = noFeed
		changed(fake, "src0_changelog", 1, now.Add(-time.Minute), 5)
		fake.stats["`src0_changelog`"]["changes_until"] = changesUntil
		now = now.Add(10 * time.Minute)
		return c.Run(context.Background(), bound)[0]
	}
	if r := run(true, nil); r.FeedHeld != "" || fake.labels("cdc.t0__state")[catalog.LabelFeedOff] != "1" {
		t.Fatalf("feed off: held %q, labels %v", r.FeedHeld, fake.labels("cdc.t0__state"))
	}
	r := run(false, t0.Add(-time.Hour)) // on again, the old marker still there
	if d := cmp.Diff([]string{"stats", "fold"}, fake.kinds()); d != "" || r.FeedHeld == "" || !strings.Contains(r.FeedHeld, "t0__changes") {
		t.Errorf("on again over the old change table: statements (-want +got):\n%s\nheld: %q", d, r.FeedHeld)
	}
	if fake.labels("cdc.t0__state")[catalog.LabelFeedOff] != "1" {
		t.Errorf("the hold was not kept: %v", fake.labels("cdc.t0__state"))
	}
	fake.first = now.Add(-time.Hour)
	r = run(false, nil) // the change table emptied (dropped and applied again)
	if d := cmp.Diff([]string{"stats", "fold", "first", "changes"}, fake.kinds()); d != "" || r.FeedHeld != "" {
		t.Errorf("on again over an empty change table: statements (-want +got):\n%s\nheld: %q", d, r.FeedHeld)
	}
	if l := fake.labels("cdc.t0__state"); l[catalog.LabelFeedOff] == "1" {
		t.Errorf("the feed was rebuilt but the label stays: %v", l)
	}
}
