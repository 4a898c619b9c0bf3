package compact

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
	"github.com/google/go-cmp/cmp"
)

// With the append ledger, a run over flows whose labels say they are clean
// reads no table: a listing of the dataset and one ledger query. A flow of
// a source the ledger shows appended to after the flow's reached mark is
// bound and run as before; the others stay idle. A ledger younger than
// LedgerSettle is not trusted, nor a flow whose reached mark is before the
// ledger could be trusted.
func TestLedgerIdleFlowsReadNothing(t *testing.T) {
	ctx := context.Background()
	fake := newFake()
	bound := testFlows(t, fake, 4, 1)
	var flows []*flow.Flow
	for _, b := range bound {
		flows = append(flows, b.Flow)
	}
	now := t0
	c := compactor(fake, &now, Options{Ledger: true, Lister: fake})
	fake.tables["cdc."+catalog.AppendsTable] = &bigquery.TableMetadata{Labels: map[string]string{}}
	fake.created["cdc."+catalog.AppendsTable] = t0.Add(-2 * time.Hour)
	run := func() map[string]string {
		t.Helper()
		sel, refused, err := c.Prepare(ctx, flows, nil, 0, 1)
		if err != nil || refused != nil {
			t.Fatal(err, refused)
		}
		reports, err := c.Compact(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, r := range reports {
			out[r.Flow] = r.Outcome
		}
		if len(out) != len(flows) {
			t.Fatalf("%d reports for %d flows: %v", len(out), len(flows), out)
		}
		return out
	}
	all := func(outcome string) map[string]string {
		out := map[string]string{}
		for _, f := range flows {
			out[f.Name] = outcome
		}
		return out
	}
	src := func(i int) string { return fmt.Sprintf("src%d_changelog", i) }

	// Fold, then find nothing new: every flow is left clean, with its
	// reached mark (labels unknown at first: no ledger query).
	for i := range flows {
		changed(fake, src(i), 1, t0.Add(-time.Minute), 1)
	}
	if got := run(); !cmp.Equal(got, all(Compacted)) {
		t.Fatalf("first run: %v", got)
	}
	now = t0.Add(10 * time.Minute)
	for i := range flows {
		fake.stats["`"+src(i)+"`"] = map[string]bigquery.Value{"events": int64(0), "unfolded": int64(0), "changes_until": t0.Add(-10 * time.Second)}
	}
	if got := run(); !cmp.Equal(got, all(UpToDate)) {
		t.Fatalf("second run: %v", got)
	}
	if l := fake.labels("cdc.t0__state"); l[catalog.LabelReached] != us(now.Add(-10*time.Second)) || l[catalog.LabelClean] != "1" {
		t.Fatalf("labels after a run that found nothing: %v", l)
	}

	// Nothing in the ledger: every flow idle, no table read, one query.
	fake.reset()
	now = t0.Add(20 * time.Minute)
	if got := run(); !cmp.Equal(got, all(Idle)) {
		t.Fatalf("third run: %v", got)
	}
	if len(fake.reads) != 0 || !cmp.Equal(fake.kinds(), []string{"ledger"}) || !cmp.Equal(fake.lists, []string{"cdc"}) {
		t.Errorf("an idle run read %v, ran %v, listed %v", fake.reads, fake.kinds(), fake.lists)
	}
	if q := fake.queries[0]; !strings.Contains(q, "`until` > "+render.Literal(t0.Add(10*time.Minute-10*time.Second))) {
		t.Errorf("the ledger query does not start at the lowest reached mark:\n%s", q)
	}

	// src2 was appended to after its flow's mark: f2 runs, reading its
	// own tables only; the others stay idle.
	fake.reset()
	now = t0.Add(30 * time.Minute)
	fake.ledger = map[string]time.Time{"src2": now.Add(5 * time.Minute)}
	fake.tables["cdc."+src(2)].NumRows = 12
	changed(fake, src(2), 2, now.Add(-time.Minute), 5)
	want := all(Idle)
	want["f2"] = Compacted
	if got := run(); !cmp.Equal(got, want) {
		t.Fatalf("fourth run: %v", got)
	}
	slices.Sort(fake.reads)
	if d := cmp.Diff([]string{"cdc." + src(2), "cdc.t2__state"}, fake.reads); d != "" {
		t.Errorf("tables read (-want +got):\n%s", d)
	}

	// A ledger made 10 minutes ago is not trusted yet: every table is read.
	fake.reset()
	fake.ledger = nil
	fake.created["cdc."+catalog.AppendsTable] = now.Add(-10 * time.Minute)
	now = t0.Add(40 * time.Minute)
	run()
	if len(fake.reads) < 2*len(flows) || slices.Contains(fake.kinds(), "ledger") {
		t.Errorf("with a young ledger the run read %v and ran %v", fake.reads, fake.kinds())
	}
}
