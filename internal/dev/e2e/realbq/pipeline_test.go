package realbq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/demo"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/dev/registryserver"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/ingest"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/sql/render"
	"google.golang.org/api/iterator"
)

// TestPipelineOnBigQuery runs the whole pipeline of the demo against real
// BigQuery, in a fresh dataset it drops at the end: bqcdc apply of
// sql/flows (table functions included), the demo stream through the ingest
// service in process and the real Storage Write default stream, every view
// against the reference model, compaction (views unchanged, every job and
// byte it reports equal to what BigQuery's job list says), compaction again
// with nothing new (idle from real table metadata: no job), the table
// functions called as functions, and the _bqcdc_status view.
//
// It is estimated (it has never run) at 3 to 6 minutes, mostly DDL and
// query latency, and well under 10 cents: about 100 small query jobs, each
// billed BigQuery's 10 MB minimum per table it reads, so 1 to 3 GB billed
// at on-demand prices, plus a few KB through the Storage Write API.
func TestPipelineOnBigQuery(t *testing.T) {
	lv := newLive(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	loc := catalog.Location{Project: lv.cfg.Project, DefaultDataset: lv.dataset}

	// The producer side: an in-process Schema Registry holding the demo
	// schemas, and the demo stream encoded as Debezium's AvroConverter does.
	reg := registryserver.New()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	regClient := registry.New(srv.URL, registry.Options{})

	// 1. bqcdc apply of the demo flows, table functions included, with the
	// schemas of schemas/ (as before a producer registered any).
	flows, refused := flow.ParseDir(repoPath("sql/flows"))
	if len(refused) > 0 || len(flows) == 0 {
		t.Fatalf("parsing sql/flows: %d flows, refused: %v", len(flows), errors.Join(refused...))
	}
	var rep apply.Report
	started := time.Now()
	bound, err := apply.AllWith(ctx, lv.bq, apply.Target{Project: loc.Project, Dataset: loc.DefaultDataset}, flows,
		apply.Schemas{Dir: repoPath("schemas")}, apply.Options{}, &rep)
	if err != nil {
		t.Fatalf("bqcdc apply: %v\n%s", err, strings.Join(rep, "\n"))
	}
	t.Logf("apply: %d objects in %s", len(rep), time.Since(started).Round(time.Millisecond))

	// 2. The demo stream through the ingest service and the Storage Write
	// default stream, handled until acknowledged as Pub/Sub would redeliver.
	msgs, err := demo.Encode(ctx, regClient, repoPath("schemas"), demo.Scenario())
	if err != nil {
		t.Fatal(err)
	}
	w := bqwrite.NewWriter(lv.bq, lv.mw, loc.Project, loc.DefaultDataset)
	defer w.Close()
	svc := ingest.New(ingest.Options{Registry: regClient, Writer: w, Log: slog.Default()})
	started = time.Now()
	var sent []demo.Published
	tombstones := 0
	for i, m := range msgs {
		id := fmt.Sprintf("live-%02d", i)
		out := deliver(t, ctx, svc, ingest.Message{Topic: m.Topic, MessageID: id, PublishTime: time.Now(),
			Attributes: map[string]string{"key": fmt.Sprint(m.Key)}, Data: m.Data})
		if out == ingest.Tombstone {
			tombstones++
		}
		sent = append(sent, demo.Published{Event: m.Event, MessageID: id})
	}
	t.Logf("ingest: %d messages in %s", len(msgs), time.Since(started).Round(time.Millisecond))

	// 3. Every message where it belongs, every view equal to the model.
	checkLanded := func(when string) {
		t.Helper()
		res, err := demo.CheckLanded(ctx, lv.bq, loc, flows, sent, tombstones)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if !res.OK() || res.Views != len(bound) {
			t.Fatalf("%s: %d views checked of %d; problems:\n%s", when, res.Views, len(bound), strings.Join(res.Problems, "\n"))
		}
	}
	checkLanded("after ingest")
	before := readViews(t, ctx, lv.bq, bound, loc)

	// 3b. bqcdc compact --dry-run: every flow's run priced with BigQuery's
	// dry runs, and nothing written (the views, labels and state unchanged).
	checkCompactDryRun(t, ctx, lv.bq, loc, flows, bound, before)

	// 4. Compaction folds everything (visibility lag 0: every append was
	// acknowledged before it starts); the views do not change, and the jobs
	// and bytes it reports are the ones BigQuery lists for the run.
	first, window := compactOnce(t, ctx, lv.bq, loc, flows, w)
	var jobs int
	var billed int64
	for _, r := range first {
		if r.Outcome != compact.Compacted {
			t.Errorf("first compaction of %s: %s (%s), want %s", r.Flow, r.Outcome, r.Error, compact.Compacted)
		}
		jobs, billed = jobs+r.Jobs, billed+r.BytesBilled
	}
	listed, listedBytes := jobsIn(t, ctx, lv.bq, window)
	if listed != jobs || listedBytes != billed {
		t.Errorf("compaction reported %d jobs billing %d bytes; BigQuery lists %d jobs billing %d bytes in its window %v",
			jobs, billed, listed, listedBytes, window)
	}
	t.Logf("compaction: %d jobs, %d bytes billed", jobs, billed)
	checkLanded("after compaction")
	after := readViews(t, ctx, lv.bq, bound, loc)
	for name, rows := range before {
		if !slices.Equal(rows, after[name]) {
			t.Errorf("view %s changed through compaction:\n%s", name, viewcheck.Diff(rows, after[name]))
		}
	}

	// 5. Nothing new: every flow idle from the changelogs' metadata alone.
	second, _ := compactOnce(t, ctx, lv.bq, loc, flows, w)
	for _, r := range second {
		if r.Outcome != compact.Idle || r.Jobs != 0 {
			t.Errorf("compaction with nothing new, %s: %s with %d jobs (%s), want %s with none", r.Flow, r.Outcome, r.Jobs, r.Error, compact.Idle)
		}
	}

	// 6. The table functions, called as functions.
	checkTableFunctions(t, ctx, lv.bq, bound, loc)

	// 7. The status view: one row per flow, nothing waiting, the dead
	// letter counted on its topic.
	checkStatusView(t, ctx, lv.bq, bound, loc)
}

// deliver hands a message to the ingest service until it is acknowledged,
// as Pub/Sub redelivers a message whose push failed.
func deliver(t *testing.T, ctx context.Context, svc *ingest.Service, m ingest.Message) ingest.Outcome {
	t.Helper()
	for attempt := 1; ; attempt++ {
		out, err := svc.Handle(ctx, m)
		if err == nil {
			return out
		}
		if attempt == 5 {
			t.Fatalf("message %s still failing after %d attempts: %v", m.MessageID, attempt, err)
		}
		t.Logf("message %s: %v (redelivering in %d s)", m.MessageID, err, 2*attempt)
		time.Sleep(time.Duration(2*attempt) * time.Second)
	}
}

// readViews reads every flow's view, one canonical line per row.
func readViews(t *testing.T, ctx context.Context, bq *bigquery.Client, bound []*flow.Bound, loc catalog.Location) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, b := range bound {
		rows, err := viewcheck.Actual(ctx, bq, b, loc)
		if err != nil {
			t.Fatalf("reading view %s: %v", b.Target, err)
		}
		out[b.Name] = rows
	}
	return out
}

// compactOnce runs one compaction of every flow as `bqcdc compact` does,
// with reports written to the report table, and returns the reports and
// the run's time window, widened by the pause it keeps on both sides so that
// no other job of this test falls in it.
func compactOnce(t *testing.T, ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, w *bqwrite.Writer) ([]compact.Report, [2]time.Time) {
	t.Helper()
	const pause = 5 * time.Second
	bound, changelogs, err := viewcheck.Bind(ctx, bq, loc, flows)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	start := time.Now()
	c := compact.New(bq, loc, compact.Options{VisibilityLag: 0, Reports: w})
	reports, err := c.Compact(ctx, compact.Selection{Flows: bound, Unbound: apply.Unbound(flows, bound), Changelogs: changelogs})
	end := time.Now()
	if err != nil {
		t.Fatalf("compaction: %v", err)
	}
	if len(reports) != len(bound) {
		t.Fatalf("compaction reported %d flows, want %d", len(reports), len(bound))
	}
	time.Sleep(pause)
	return reports, [2]time.Time{start.Add(-pause + time.Second), end.Add(pause - time.Second)}
}

// jobsIn counts this user's top-level jobs created in the window and the
// bytes BigQuery billed for them (a script's child jobs are in its total).
func jobsIn(t *testing.T, ctx context.Context, bq *bigquery.Client, window [2]time.Time) (int, int64) {
	t.Helper()
	it := bq.Jobs(ctx)
	it.MinCreationTime, it.MaxCreationTime = window[0], window[1]
	n, bytes := 0, int64(0)
	for {
		j, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return n, bytes
		}
		if err != nil {
			t.Fatalf("listing the jobs of the compaction: %v", err)
		}
		n++
		if st := j.LastStatus(); st != nil && st.Statistics != nil {
			if q, ok := st.Statistics.Details.(*bigquery.QueryStatistics); ok {
				bytes += q.TotalBytesBilled
			}
		}
	}
}

// checkTableFunctions calls <target>_at and <target>_changes of every
// current-state and history flow, and <target>_as_of of the bitemporal one,
// and compares them with the model (and _as_of with its own body).
func checkTableFunctions(t *testing.T, ctx context.Context, bq *bigquery.Client, bound []*flow.Bound, loc catalog.Location) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	called := 0
	for _, b := range bound {
		events, err := viewcheck.Events(ctx, bq, b, loc)
		if err != nil {
			t.Fatal(err)
		}
		if b.Bitemporal {
			business := fmt.Sprintf("(SELECT MAX(%s) FROM %s)", catalog.QuoteIdent(b.Sequence[0].Name), loc.ViewTable(b.Flow))
			literal, err := scalarLiteral(ctx, bq, business)
			if err != nil {
				t.Fatal(err)
			}
			got, err := viewcheck.CallAsOf(ctx, bq, b, loc, literal, render.Literal(now))
			if err != nil {
				t.Fatalf("calling %s: %v", catalog.AsOfFunctionName(b.Flow), err)
			}
			want, err := viewcheck.AsOf(ctx, bq, b, loc, literal, render.Literal(now))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || !slices.Equal(got, want) {
				t.Errorf("%s(%s, now) differs from its body (%d rows):\n%s", catalog.AsOfFunctionName(b.Flow), literal, len(got), viewcheck.Diff(want, got))
			}
			called++
			continue
		}
		got, err := viewcheck.CallAt(ctx, bq, b, loc, now)
		if err != nil {
			t.Fatalf("calling %s: %v", catalog.AtFunctionName(b.Flow), err)
		}
		if diff := viewcheck.Diff(viewcheck.Expected(b, model.AsOf(events, now)), got); diff != "" {
			t.Errorf("%s(now) differs from the model:\n%s", catalog.AtFunctionName(b.Flow), diff)
		}
		w, err := viewcheck.Watermark(ctx, bq, b, loc)
		if err != nil {
			t.Fatal(err)
		}
		changes, err := viewcheck.CallChanges(ctx, bq, b, loc, time.Time{}, time.Time{})
		if err != nil {
			t.Fatalf("calling %s: %v", catalog.ChangesFunctionName(b.Flow), err)
		}
		if diff := viewcheck.Diff(viewcheck.ExpectedChanges(b, events, time.Time{}, w, w), changes); diff != "" {
			t.Errorf("%s(NULL, NULL) differs from the model:\n%s", catalog.ChangesFunctionName(b.Flow), diff)
		}
		if replayed := viewcheck.ReplayChanges(b, changes); !slices.Equal(replayed, got) {
			t.Errorf("replaying %s from the start does not give %s(now):\n%s", catalog.ChangesFunctionName(b.Flow), catalog.AtFunctionName(b.Flow), viewcheck.Diff(got, replayed))
		}
		called += 2
	}
	if called < 5 {
		t.Errorf("called only %d table functions", called)
	}
}

var plainLiteral = regexp.MustCompile(`^[0-9A-Za-z:._ +/-]*$`)

// scalarLiteral evaluates a scalar query and returns its value as a SQL
// literal (strings and integers only: the demo's sequences).
func scalarLiteral(ctx context.Context, bq *bigquery.Client, sql string) (string, error) {
	it, err := bq.Query("SELECT " + sql + " AS v").Read(ctx)
	if err != nil {
		return "", fmt.Errorf("evaluating %s: %w", sql, err)
	}
	rows, err := clients.Collect(it)
	if err != nil || len(rows) != 1 {
		return "", fmt.Errorf("evaluating %s: %d rows, %v", sql, len(rows), err)
	}
	switch v := rows[0]["v"].(type) {
	case string:
		if !plainLiteral.MatchString(v) {
			return "", fmt.Errorf("%s = %q: not a plain string", sql, v)
		}
		return "'" + v + "'", nil
	case int64:
		return fmt.Sprint(v), nil
	}
	return "", fmt.Errorf("%s = %v (%T): want a string or an integer", sql, rows[0]["v"], rows[0]["v"])
}

// checkStatusView reads _bqcdc_status: a row per flow, no tail after the
// compaction, the last run idle, and the customers topic's dead letter.
func checkStatusView(t *testing.T, ctx context.Context, bq *bigquery.Client, bound []*flow.Bound, loc catalog.Location) {
	t.Helper()
	it, err := bq.Query(fmt.Sprintf("SELECT * FROM %s.%s.%s", catalog.QuoteIdent(loc.Project), catalog.QuoteIdent(loc.DefaultDataset),
		catalog.QuoteIdent(catalog.StatusView))).Read(ctx)
	if err != nil {
		t.Fatalf("reading %s: %v", catalog.StatusView, err)
	}
	rows, err := clients.Collect(it)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		name, _ := r["flow"].(string)
		seen[name] = true
		if r["tail_rows"] != int64(0) || r["last_run_outcome"] != compact.Idle {
			t.Errorf("%s row of %s: tail_rows %v, last_run_outcome %v; want 0 and %s", catalog.StatusView, name, r["tail_rows"], r["last_run_outcome"], compact.Idle)
		}
		wantDead := int64(0)
		if r["source"] == demo.Customers {
			wantDead = 1 // the JSON message of the demo stream
		}
		if r["dead_letters_1d"] != wantDead {
			t.Errorf("%s row of %s: dead_letters_1d %v, want %d", catalog.StatusView, name, r["dead_letters_1d"], wantDead)
		}
	}
	for _, b := range bound {
		if !seen[b.Name] {
			t.Errorf("%s has no row for flow %s (rows: %v)", catalog.StatusView, b.Name, rows)
		}
	}
}

// checkCompactDryRun runs compaction as `bqcdc compact --dry-run` does
// (Options.DryRun with BigQuery's dry runs) before anything was folded:
// every change-stream flow plans a fold, each statement priced without an
// error, and the run writes nothing: the views read the same and the state
// tables carry no watermark label. Beside each of BigQuery's estimates the
// cost model prices the statement over the tables' metadata
// (compact.Model, as the command does): BigQuery's may not exceed twice the
// model's (issue 40: the model's figures in docs/cost.md rest on it).
func checkCompactDryRun(t *testing.T, ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, bound []*flow.Bound, views map[string][]string) {
	t.Helper()
	c := compact.New(bq, loc, compact.Options{VisibilityLag: 0, DryRun: compact.DryRun(bq), Model: compact.Model(bq)})
	sel, refused, err := c.Prepare(ctx, flows, nil, 0, 1)
	if err != nil || refused != nil {
		t.Fatalf("preparing the dry run: %v %v", err, refused)
	}
	reports, err := c.Compact(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		var folds int
		for _, st := range r.Plan {
			if st.Error != "" {
				t.Errorf("dry run of %s: %s: %s", r.Flow, st.Step, st.Error)
			}
			if st.Step == compact.StepFold {
				folds++
			}
			switch {
			case st.Ran:
			case !st.HasModel || st.ModelError != "":
				t.Errorf("dry run of %s: %s: the model did not price it: %s", r.Flow, st.Step, st.ModelError)
			case st.Bytes > 2*st.Model:
				t.Errorf("dry run of %s: %s: BigQuery estimates %d bytes, more than twice the model's %d", r.Flow, st.Step, st.Bytes, st.Model)
			}
			t.Logf("dry run of %s: would run %s, %d bytes (model %d)", r.Flow, st.Step, st.Bytes, st.Model)
		}
		if folds != 1 {
			t.Errorf("dry run of %s planned %d folds, want 1: %+v", r.Flow, folds, r.Plan)
		}
	}
	for _, b := range bound {
		md, err := bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow)).Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := md.Labels[catalog.LabelWatermark]; ok {
			t.Errorf("the dry run labelled %s's state with watermark %s", b.Name, v)
		}
	}
	after := readViews(t, ctx, bq, bound, loc)
	for name, rows := range views {
		if !slices.Equal(rows, after[name]) {
			t.Errorf("view %s changed through a dry run:\n%s", name, viewcheck.Diff(rows, after[name]))
		}
	}
}
