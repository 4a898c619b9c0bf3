package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// With a Lister, a second apply that changes nothing reads no object: it
// lists each dataset (a request per 1,000 objects) and finds every object
// labelled with the hash of what is wanted of it. Only the two plain views
// (compaction state, status) and the datasets are read.
func TestSecondApplyListsInsteadOfReading(t *testing.T) {
	ctx := context.Background()
	flows, schemas := scaleDeployment(t, 40)
	bq, lister, counter := fakeClients(t, 0)
	target := testTarget
	opts := Options{Concurrency: 8, Lister: lister}

	var first Report
	if _, err := AllWith(ctx, bq, target, flows, schemas, opts, &first); err != nil {
		t.Fatal(err)
	}
	calls := counter.take()
	// Nothing is read before it is created: the listing said it was not there.
	for call, n := range calls {
		if strings.HasPrefix(call, "GET ") && strings.Contains(call, "_changelog") {
			t.Errorf("first apply read a changelog it was about to create: %d× %s", n, call)
		}
	}

	second := func(opts Options) (Report, map[string]int) {
		t.Helper()
		var rep Report
		if _, err := AllWith(ctx, bq, target, flows, schemas, opts, &rep); err != nil {
			t.Fatal(err)
		}
		for _, line := range rep {
			if !strings.HasSuffix(line, ": unchanged") && !strings.HasSuffix(line, ": exists") {
				t.Errorf("second apply changed something: %q", line)
			}
		}
		return rep, counter.take()
	}
	rep, calls := second(opts)
	if len(rep) != len(first) {
		t.Errorf("second apply reported %d objects, the first %d", len(rep), len(first))
	}
	want := map[string]int{
		"GET projects/fake-project/datasets/cdc":                                       1,
		"GET projects/fake-project/datasets/history":                                   1,
		"GET projects/fake-project/datasets/cdc/tables":                                1,
		"GET projects/fake-project/datasets/history/tables":                            1,
		"GET projects/fake-project/datasets/cdc/tables/" + catalog.CompactionStateView: 1,
		"GET projects/fake-project/datasets/cdc/tables/" + catalog.StatusView:          1,
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("second apply made these requests:\n%s\nwant:\n%s", show(calls), show(want))
	}

	// Compaction moving a view's bound (View, as compaction calls it)
	// labels the view as it does: the next apply still reads nothing of it.
	b := mustBind(t, flows[:1], schemas)[0]
	var crep Report
	if _, err := View(ctx, bq, catalogLoc(target), b, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), &crep); err != nil {
		t.Fatal(err)
	}
	counter.take()
	if _, calls = second(opts); len(calls) != len(want) {
		t.Errorf("after compaction moved a bound, the second apply made:\n%s", show(calls))
	}

	// An object whose label does not match (here: removed) is read, and
	// labelled again without being otherwise changed.
	tbl := bq.Dataset("cdc").Table(catalog.StateName(flows[0]))
	md, err := tbl.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var upd bigquery.TableMetadataToUpdate
	upd.DeleteLabel(catalog.SpecLabel)
	if _, err := tbl.Update(ctx, upd, md.ETag); err != nil {
		t.Fatal(err)
	}
	counter.take()
	var third Report
	if _, err := AllWith(ctx, bq, target, flows, schemas, opts, &third); err != nil {
		t.Fatal(err)
	}
	calls = counter.take()
	stateGet := "GET projects/fake-project/datasets/cdc/tables/" + catalog.StateName(flows[0])
	if calls[stateGet] != 1 {
		t.Errorf("the unlabelled state table was not read: %s", show(calls))
	}
	relabelled := 0
	for _, line := range third {
		if strings.Contains(line, "updated") {
			relabelled++
			if !strings.Contains(line, catalog.StateName(flows[0])) || !strings.Contains(line, "labelled as applied") {
				t.Errorf("third apply: %q", line)
			}
		}
	}
	if relabelled != 1 {
		t.Errorf("third apply updated %d objects, want the one unlabelled:\n%s", relabelled, strings.Join(third, "\n"))
	}

	// Verify reads every object whatever the labels say.
	_, calls = second(Options{Concurrency: 8, Lister: lister, Verify: true})
	gets := 0
	for call, n := range calls {
		if strings.HasPrefix(call, "GET ") && strings.Contains(call, "/tables/") {
			gets += n
		}
	}
	if gets != len(first)-2*len(flows)-2 { // every table and view; not the functions (no object) or datasets
		t.Errorf("verify read %d objects of %d", gets, len(first))
	}
}

func show(calls map[string]int) string {
	var lines []string
	for k, n := range calls {
		lines = append(lines, fmt.Sprintf("%4d %s", n, k))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func catalogLoc(t Target) catalog.Location {
	return catalog.Location{Project: t.Project, DefaultDataset: t.Dataset}
}

// mustBind reads the flows' source schemas and binds the flows to their
// changelogs, as bqcdc render and apply do.
func mustBind(t testing.TB, flows []*flow.Flow, schemas Schemas) []*flow.Bound {
	t.Helper()
	sources, flows, err := LookupSources(context.Background(), flows, schemas)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := flow.BindAll(flows, Changelogs(sources))
	if err != nil {
		t.Fatal(err)
	}
	return bound
}
