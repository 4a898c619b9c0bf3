package compact

import (
	"context"
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
// each materialized view over it that retraction keeps: one statement
// reading the feed from the state's label (a constant that prunes the
// change table) to the position the feed reached, then the label. A view
// compaction does not refresh, one over another flow, and one whose state
// apply has not made yet are left alone; a crash after the refresh leaves
// the label, so the next run refreshes from where it did (the statement
// reads the state's own position, so nothing is counted twice).
func TestRunRefreshesMaterializedViews(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 2, 1)
	_, golds, err := flow.ParseAll("gold.sql", `
CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS n, SUM(id) AS ids FROM t0 GROUP BY v;
CREATE MATERIALIZED VIEW distinct_v AS SELECT COUNT(DISTINCT v) AS n, op FROM t0 GROUP BY op;
CREATE MATERIALIZED VIEW other AS SELECT v, COUNT(*) AS n FROM t1 GROUP BY v;
`)
	if err != nil {
		t.Fatal(err)
	}
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
	for _, want := range []string{"CREATE OR REPLACE TABLE `p`.`cdc`.`per_v__state`",
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

func lit(t time.Time) string {
	return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00:00'"
}

// A view that cannot be refreshed (a permission, a definition BigQuery
// refuses) does not hold its source flow back: the run is compacted and
// labelled, the view stays where it was and the report says why.
func TestRefreshFailureDoesNotFailTheFlow(t *testing.T) {
	fake := newFake()
	bound := testFlows(t, fake, 1, 1)
	_, golds, err := flow.ParseAll("gold.sql", "CREATE MATERIALIZED VIEW per_v AS SELECT v, COUNT(*) AS n FROM t0 GROUP BY v;")
	if err != nil {
		t.Fatal(err)
	}
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
