package compact

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"
)

// A run of a flow refreshes, right after its change feed, the state of
// each materialized view over it that retraction keeps: one INSERT of the
// touched groups' new versions, reading the feed from the state's label (a
// constant that prunes the change table) to the position the feed reached,
// then the label. A view
// compaction does not refresh, one over another flow, and one whose state
// apply has not made yet are left alone; a crash after the refresh leaves
// the label, so the next run refreshes from where it did (a group's new
// rows are those after its newest version, so nothing is counted twice).
func TestRunRefreshesMaterializedViews(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 2, 1)
	golds := parseGolds(t, `
CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS n, SUM(id) AS ids FROM t0 GROUP BY v;
CREATE MATERIALIZED VIEW distinct_v AS SELECT COUNT(DISTINCT v) AS n, op FROM t0 GROUP BY op;
CREATE MATERIALIZED VIEW other AS SELECT v, COUNT(*) AS n FROM t1 GROUP BY v;
`)
	feedBefore := t0.Add(-2 * time.Hour)
	fake.tables["cdc.per_v__state"] = &bigquery.TableMetadata{Labels: map[string]string{catalog.LabelWatermark: us(feedBefore)}}
	now := t0
	crash := true
	c := compactor(fake, &now, Options{Golds: golds, AfterStep: func(_, step string) error {
		if crash && step == StepGold {
			crash = false
			return context.Canceled
		}
		return nil
	}})
	changed(fake, "src0_changelog", 3, t0.Add(-time.Minute), 1, 2)
	fake.first = t0.Add(-time.Minute)
	rep := c.Run(context.Background(), bound[:1])[0]
	if rep.Outcome != Failed {
		t.Fatalf("a crash after the refresh: %+v", rep)
	}
	if d := cmp.Diff([]string{"stats", "fold", "first", "changes", "gold"}, fake.kinds()); d != "" {
		t.Errorf("statements (-want +got):\n%s", d)
	}
	refresh := fake.queries[4]
	w := t0.Add(-10 * time.Second)
	for _, want := range []string{"INSERT INTO `p`.`cdc`.`per_v__state`",
		"`_commit_position` > IFNULL(" + lit(feedBefore), "`_commit_position` <= " + lit(w), "LEAST(" + lit(w)} {
		if !strings.Contains(refresh, want) {
			t.Errorf("the refresh lacks %q:\n%s", want, refresh)
		}
	}
	if l := fake.labels("cdc.per_v__state"); l[catalog.LabelWatermark] != us(feedBefore) {
		t.Errorf("label moved by a run that crashed after the refresh: %v", l)
	}

	// The next run refreshes again, from the label, and labels the state.
	fake.reset()
	rep = c.Run(context.Background(), bound[:1])[0]
	if rep.Outcome != Compacted || rep.Golds != 1 {
		t.Fatalf("the run after: %+v", rep)
	}
	if k := fake.kinds(); k[len(k)-1] != "gold" {
		t.Errorf("statements: %v", k)
	}
	if l := fake.labels("cdc.per_v__state"); l[catalog.LabelWatermark] != us(w) {
		t.Errorf("label after the refresh: %v, want %s", l, us(w))
	}
}

// parseGolds parses src, materialized views over the test flows' targets.
func parseGolds(t *testing.T, src string) []*flow.Gold {
	t.Helper()
	_, golds, err := flow.ParseAll("gold.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	return golds
}

func lit(t time.Time) string {
	return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00:00'"
}

// A view that cannot be refreshed (a permission, a definition BigQuery
// refuses) does not hold its source flow back: the run is compacted and
// labelled, the view stays where it was and the report says why.
func TestRefreshFailureDoesNotFailTheFlow(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	golds := parseGolds(t, "CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS n FROM t0 GROUP BY v;")
	fake.tables["cdc.per_v__state"] = &bigquery.TableMetadata{Labels: map[string]string{}}
	fake.fail["per_v__state"] = failure{err: &googleapi.Error{Code: 403, Message: "Access Denied: Table p:cdc.per_v__state"}, times: -1}
	now := t0
	c := compactor(fake, &now, Options{Golds: golds})
	changed(fake, "src0_changelog", 3, t0.Add(-time.Minute), 1, 2)
	fake.first = t0.Add(-time.Minute)
	rep := c.Run(context.Background(), bound)[0]
	if rep.Outcome != Compacted || rep.Golds != 0 || len(rep.GoldErrors) != 1 || !strings.Contains(rep.GoldErrors[0], "Access Denied") {
		t.Fatalf("%+v", rep)
	}
	if l := fake.labels("cdc.t0__state"); l[catalog.LabelWatermark] != us(t0.Add(-10*time.Second)) {
		t.Errorf("the flow's labels: %v", l)
	}
	if l := fake.labels("cdc.per_v__state"); l[catalog.LabelWatermark] != "" {
		t.Errorf("the view's state was labelled: %v", l)
	}
	if !strings.Contains(rep.Line(), "materialized view not refreshed: per_v: ") {
		t.Errorf("line: %s", rep.Line())
	}
}

// The refresh of a large state first asks which groups the run touches
// (their clustering values), and reads only their blocks: a constant filter
// in the refresh. A small state is read whole, in one statement. Once a
// day, with the flow's maintenance, the versions that no longer count go.
func TestRefreshOfALargeStateReadsTheTouchedGroups(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	golds := parseGolds(t, "CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS n FROM t0 GROUP BY v;")
	fake.tables["cdc.per_v__state"] = &bigquery.TableMetadata{NumBytes: 1 << 30, Labels: map[string]string{}}
	fake.touched = []bigquery.Value{int64(-5), int64(9)}
	now := t0
	c := compactor(fake, &now, Options{Golds: golds})
	changed(fake, "src0_changelog", 3, t0.Add(-time.Minute), 1, 2)
	fake.first = t0.Add(-time.Minute)
	if rep := c.Run(context.Background(), bound)[0]; rep.Outcome != Compacted || rep.Golds != 1 {
		t.Fatalf("%+v", rep)
	}
	k := fake.kinds()
	if d := cmp.Diff([]string{"gold_touched", "gold"}, k[len(k)-2:]); d != "" {
		t.Fatalf("statements %v (-want +got):\n%s", k, d)
	}
	if refresh := fake.queries[len(k)-1]; !strings.Contains(refresh, "AND __gkey IN (-5, 9)") {
		t.Errorf("the refresh does not filter by the touched groups:\n%s", refresh)
	}

	// A small state: no question first, every group's newest version read.
	fake.reset()
	fake.tables["cdc.per_v__state"].NumBytes = 1 << 20
	now = now.Add(10 * time.Minute)
	changed(fake, "src0_changelog", 3, now.Add(-time.Minute), 3, 4)
	if rep := c.Run(context.Background(), bound)[0]; rep.Outcome != Compacted || rep.Golds != 1 {
		t.Fatalf("%+v", rep)
	}
	k = fake.kinds()
	at := slices.Index(k, "gold")
	if at < 1 || slices.Contains(k, "gold_touched") {
		t.Fatalf("statements: %v", k)
	}
	if refresh := fake.queries[at]; strings.Contains(refresh, "__gkey IN") {
		t.Errorf("a small state filtered:\n%s", refresh)
	}
	if !slices.Contains(k, "gold_maintain") {
		t.Errorf("the run maintained the flow but not the view's state: %v", k)
	}
}

// A materialized view's state (a table without partitions, whose DELETE is
// billed for all of it) is maintained with its flow only once it holds
// more than (1 + Options.GoldMaintainGrowth) times the rows its last
// maintenance left, which the maintenance labels (from the table's
// metadata after its DELETE, beside the position): so a view whose runs
// write few versions is not read whole every day. A state without the
// label is maintained; a negative growth maintains at every maintenance
// of the flow.
func TestGoldMaintenanceWaitsForGrowth(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	golds := parseGolds(t, "CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS n FROM t0 GROUP BY v;")
	state := &bigquery.TableMetadata{NumRows: 1000, Labels: map[string]string{}}
	fake.tables["cdc.per_v__state"] = state
	now := t0
	opts := Options{Golds: golds, MaintainEvery: time.Nanosecond}
	run := func(wantMaintained bool, why string) {
		t.Helper()
		fake.reset()
		now = now.Add(10 * time.Minute)
		fake.tables["cdc."+catalog.TableName("src0")].NumRows++ // appended to
		changed(fake, "src0_changelog", 3, now.Add(-time.Minute), 1, 2)
		fake.first = now.Add(-time.Minute)
		if rep := compactor(fake, &now, opts).Run(context.Background(), bound)[0]; rep.Outcome != Compacted || rep.Golds != 1 {
			t.Fatalf("%s: %+v", why, rep)
		}
		k := fake.kinds()
		if got := slices.Contains(k, "gold_maintain"); got != wantMaintained {
			t.Errorf("%s: view's state maintained %v, want %v: %v", why, got, wantMaintained, k)
		}
	}
	run(false, "the flow's first run") // nothing to maintain yet
	run(true, "a state never labelled")
	if l := fake.labels("cdc.per_v__state"); l[catalog.LabelGoldRows] != "1000" || l[catalog.LabelWatermark] == "" {
		t.Fatalf("labels after the maintenance: %v", l)
	}
	state.NumRows = 1250 // a quarter more: not yet
	run(false, "a quarter more rows")
	if l := fake.labels("cdc.per_v__state"); l[catalog.LabelGoldRows] != "1000" {
		t.Errorf("a refresh lost the rows label: %v", l)
	}
	state.NumRows = 1251
	run(true, "more than a quarter more rows")
	if l := fake.labels("cdc.per_v__state"); l[catalog.LabelGoldRows] != "1251" {
		t.Errorf("labels after the maintenance: %v", l)
	}
	opts.GoldMaintainGrowth = -1
	run(true, "growth off")
}
