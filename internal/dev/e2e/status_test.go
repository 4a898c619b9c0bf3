package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/status"
	"github.com/bqcdc/bqcdc/sql/render"
)

var statusFlows = strings.NewReplacer("c.users", "s.users", "FLOW c_", "FLOW s_", "INTO c_", "INTO s_").Replace(compactFlows)

// TestStatusOfFlows: with known changes (the newest 90 s old), one flow
// compacted and one not, and dead letters of today and of two days ago,
// bqcdc status and the dataset's _bqcdc_status view report each flow's
// lag, tail, last compaction and dead letters, and the thresholds find
// what is past them. The compaction's metrics are checked too.
func TestStatusOfFlows(t *testing.T) {
	e := testenv.New(t, stack, "status")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "s.sql", statusFlows, "s.users", testenv.UsersImage)
	flows := []*flow.Flow{bound[0].Flow, bound[1].Flow}
	var rep apply.Report
	if err := apply.DeadLetters(ctx, e.BQ, e.Loc.DefaultDataset, 0, &rep); err != nil {
		t.Fatal(err)
	}
	if err := apply.Status(ctx, e.BQ, e.Loc, flows, &rep); err != nil {
		t.Fatal(err)
	}

	now := time.Now().UTC()
	row := func(id int64, seq int64, msg string, sourceAgo, ingestedAgo time.Duration) map[string]any {
		r := userRow(id, "n", "INSERT", seq, msg, now.Add(-ingestedAgo))
		r[catalog.ColSourceTS] = now.Add(-sourceAgo).UnixMicro()
		return r
	}
	e.AppendRows(t, "s.users", []map[string]any{
		row(1, 1, "m1", 11*time.Minute, 10*time.Minute), row(2, 1, "m2", 11*time.Minute, 10*time.Minute), row(3, 1, "m3", 11*time.Minute, 10*time.Minute),
	})
	// Compact the first flow only, as of 5 minutes ago: its watermark is
	// 6 minutes ago, after the three rows.
	mp, err := metrics.Start(ctx, metrics.Config{Exporter: metrics.ExportMemory})
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(-5 * time.Minute)
	reports := compact.New(e.BQ, e.Loc, compact.Options{VisibilityLag: time.Minute, Now: func() time.Time { return at },
		Backoff: 20 * time.Millisecond, Reports: e.W, Metrics: mp.Recorder()}).Run(ctx, bound[:1])
	if r := reports[0]; r.Outcome != compact.Compacted || r.EventsRead != 3 {
		t.Fatalf("compaction: %+v", r)
	}
	// Two more rows after the watermark; the newest change is 90 s old.
	e.AppendRows(t, "s.users", []map[string]any{row(4, 1, "m4", 3*time.Minute, 2*time.Minute), row(1, 2, "m5", 90*time.Second, time.Minute)})
	dead := func(stage, reason string, ago time.Duration) map[string]any {
		return catalog.DeadLetter{At: now.Add(-ago), Delivery: catalog.Delivery{Topic: "s.users", MessageID: "d" + stage, Data: []byte{1}}, Stage: stage, Reason: reason}.Row()
	}
	if err := e.W.Append(ctx, catalog.DeadLetterTable, []map[string]any{
		dead("decode", "truncated payload", time.Hour), dead("decode", "truncated payload", 2*time.Hour),
		dead("registry", "schema 9 not found", 3*time.Hour), dead("wire", "not framed", 48*time.Hour), // two days ago: not counted
	}); err != nil {
		t.Fatal(err)
	}

	got, err := status.Gather(ctx, e.BQ, e.Loc, flows)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Flows) != 2 {
		t.Fatalf("flows = %+v", got.Flows)
	}
	current, history := got.Flows[0], got.Flows[1] // by name: s_current, s_history
	if current.Flow != "s_current" || current.TailRows != 2 || current.LastRun == nil || current.LastRun.Outcome != compact.Compacted ||
		current.LastRun.Events != 3 || current.LastRun.Jobs < 1 || !current.Watermark.Equal(at.Add(-time.Minute).Truncate(time.Microsecond)) {
		t.Errorf("compacted flow: %+v (last run %+v)", current, current.LastRun)
	}
	if history.Flow != "s_history" || history.TailRows != 5 || history.LastRun != nil {
		t.Errorf("flow never compacted: %+v", history)
	}
	elapsed := time.Since(now)
	for _, f := range got.Flows {
		if f.LagSeconds < 90 || time.Duration(f.LagSeconds)*time.Second > 90*time.Second+elapsed+time.Second ||
			!f.NewestSourceTS.Equal(now.Add(-90*time.Second).Truncate(time.Microsecond)) {
			t.Errorf("%s: newest change %v, lag %d s; want 90 s (+%s)", f.Flow, f.NewestSourceTS, f.LagSeconds, elapsed)
		}
		// The emulator returns "; " between the reasons as ";  " here (not
		// with literals; cause not found): spaces are compared collapsed.
		if reasons := strings.Join(strings.Fields(f.DeadLetterReasons), " "); f.DeadLetters != 3 || reasons != "decode: truncated payload (2); registry: schema 9 not found (1)" {
			t.Errorf("%s: dead letters %d %q", f.Flow, f.DeadLetters, f.DeadLetterReasons)
		}
	}
	if len(got.Sources) != 1 || got.Sources[0].Rows+got.Sources[0].StreamingRows != 5 || !got.Sources[0].LastAppend.Equal(now.Add(-time.Minute).Truncate(time.Microsecond)) {
		t.Errorf("sources = %+v", got.Sources)
	}
	if fmt.Sprint(got.DeadLetters) != "[{s.users decode truncated payload 2} {s.users registry schema 9 not found 1}]" {
		t.Errorf("dead letters = %v", got.DeadLetters)
	}

	// The view in the dataset says the same.
	view, err := e.Query("SELECT flow, tail_rows, last_run_outcome, dead_letters_1d FROM `status.cdc._bqcdc_status` ORDER BY flow")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(view) != "[map[dead_letters_1d:3 flow:s_current last_run_outcome:compacted tail_rows:2] map[dead_letters_1d:3 flow:s_history last_run_outcome:<nil> tail_rows:5]]" {
		t.Errorf("%s = %v", catalog.StatusView, view)
	}

	// Past the tables one query may name, freshness and tail come from the
	// compaction runs: as of the run, for the compacted flow (its three
	// rows, newest 11 minutes old, none after its watermark then); nothing
	// for the flow never compacted.
	render.StatusMaxChangelogs = 0
	fromRuns, err := status.Gather(ctx, e.BQ, e.Loc, flows)
	render.StatusMaxChangelogs = 900
	if err != nil {
		t.Fatal(err)
	}
	if len(fromRuns.Flows) != 2 {
		t.Fatalf("flows from the runs = %+v", fromRuns.Flows)
	}
	if c := fromRuns.Flows[0]; c.Flow != "s_current" || c.TailRows != 0 || !c.NewestSourceTS.Equal(now.Add(-11*time.Minute).Truncate(time.Microsecond)) ||
		!c.LastIngestedAt.Equal(now.Add(-10*time.Minute).Truncate(time.Microsecond)) || c.LastRun == nil || c.LastRun.Outcome != compact.Compacted {
		t.Errorf("compacted flow, from the runs: %+v", c)
	}
	if h := fromRuns.Flows[1]; h.Flow != "s_history" || !h.NewestSourceTS.IsZero() || h.LastRun != nil {
		t.Errorf("flow never compacted, from the runs: %+v", h)
	}

	// Past what a view's query may list, the flows come from the table
	// apply writes (catalog.FlowsTable): the same rows as from the runs.
	max := render.StatusMaxView
	render.StatusMaxView = 1
	var written apply.Report
	err = apply.Status(ctx, e.BQ, e.Loc, flows, &written)
	fromTable, gerr := status.Gather(ctx, e.BQ, e.Loc, flows)
	render.StatusMaxView = max
	if err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	same := func(fs []status.Flow) string {
		var out []string
		for _, f := range fs {
			// Seconds pass between the two reads; the emulator spaces
			// the reasons' separator differently from one read to
			// another (see above).
			f.LagSeconds, f.DeadLetterReasons = 0, strings.Join(strings.Fields(f.DeadLetterReasons), " ")
			run := "none"
			if f.LastRun != nil {
				run = fmt.Sprintf("%+v", *f.LastRun)
			}
			f.LastRun = nil
			out = append(out, fmt.Sprintf("%+v %s", f, run))
		}
		return strings.Join(out, "\n")
	}
	if same(fromTable.Flows) != same(fromRuns.Flows) {
		t.Errorf("flows from the flows table:\n%+v\nfrom the runs:\n%+v", fromTable.Flows, fromRuns.Flows)
	}
	if view, err := e.Query("SELECT flow, source, kind FROM `status.cdc._bqcdc_status` ORDER BY flow"); err != nil ||
		fmt.Sprint(view) != "[map[flow:s_current kind:stream source:s.users] map[flow:s_history kind:stream source:s.users]]" {
		t.Errorf("%s over the flows table = %v (%v); apply reported %v", catalog.StatusView, view, err, written)
	}

	var problems []string
	for _, p := range status.Check(&got, status.Thresholds{MaxLag: 30 * time.Second, MaxTail: 3, MaxCompactionAge: time.Hour, MaxDeadLetters: 0}) {
		problems = append(problems, p.Flow+p.Source+" "+p.Check)
	}
	if fmt.Sprint(problems) != "[s_current lag s_history lag s_history tail s_history compaction s.users dead_letters]" {
		t.Errorf("problems = %v", problems)
	}
	if len(status.Check(&got, status.Off)) != 0 {
		t.Errorf("problems with every check off: %v", got.Problems)
	}
	var buf bytes.Buffer
	if err := status.Write(&buf, got); err != nil {
		t.Fatal(err)
	}
	t.Logf("bqcdc status:\n%s", buf.String())

	series, err := mp.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, s := range series {
		if s.Attributes["flow"] == "s_current" && s.Value != nil {
			seen[s.Name+"/"+s.Attributes["outcome"]] = math.Round(*s.Value*1000) / 1000 // the watermark is in microseconds
		}
	}
	if seen[metrics.CompactionRuns+"/compacted"] != 1 || seen[metrics.CompactionEvents+"/"] != 3 || seen[metrics.CompactionUnfoldedAge+"/"] != 60 {
		t.Errorf("compaction metrics = %v; want 1 compacted run, 3 events, a watermark 60 s behind", seen)
	}
}
