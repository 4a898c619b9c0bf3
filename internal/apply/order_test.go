package apply

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/sql/render"
)

// A first apply on an empty dataset makes every object after the objects
// it reads (the fake, as BigQuery, refuses a view, a table function or a
// query that names a missing object, and a CREATE TABLE ... AS makes its
// table), including the status view's table of flows, which a deployment
// past ~2,000 flows needs (render.StatusMaxView lowered to take that path
// with a few). A second apply, with the listing and without, changes
// nothing. Before the fake modelled DDL, the label of _bqcdc_flows failed
// with 404 after its CREATE TABLE ... AS, in the fake only (issue 41).
func TestFirstApplyOnEmptyDatasetInOrder(t *testing.T) {
	maxView := render.StatusMaxView
	render.StatusMaxView = 1
	t.Cleanup(func() { render.StatusMaxView = maxView })

	ctx := context.Background()
	flows, schemas := scaleDeployment(t, 6)
	srv := fakebq.Start(t, fakebq.Options{})
	bq, lister := srv.ClientsVia(t, http.DefaultTransport)
	target := Target{Project: fakebq.DefaultProject, Dataset: "cdc"}
	for i, opts := range []Options{{Lister: lister}, {Lister: lister}, {}} {
		var rep Report
		if _, err := AllWith(ctx, bq, target, flows, schemas, opts, &rep); err != nil {
			t.Fatalf("apply %d: %v", i+1, err)
		}
		flowsLine := ""
		for _, line := range rep {
			if strings.HasPrefix(line, "table "+catalog.FlowsTable+":") {
				flowsLine = line
			}
			if i > 0 && !strings.HasSuffix(line, ": unchanged") && !strings.HasSuffix(line, ": exists") {
				t.Errorf("apply %d changed something: %q", i+1, line)
			}
		}
		if want := []string{"written (12 flows)", "unchanged", "unchanged"}[i]; flowsLine != "table "+catalog.FlowsTable+": "+want {
			t.Errorf("apply %d: %q, want %q", i+1, flowsLine, want)
		}
	}
	md, err := bq.Dataset("cdc").Table(catalog.FlowsTable).Metadata(ctx)
	if err != nil {
		t.Fatalf("the status view's table of flows after apply: %v", err)
	}
	if md.Labels[catalog.SpecLabel] == "" {
		t.Errorf("%s is not labelled with what it lists: %v", catalog.FlowsTable, md.Labels)
	}
	if _, err := bq.Dataset("cdc").Table(catalog.FlowsTable + "__next").Metadata(ctx); err == nil {
		t.Errorf("the scratch table %s__next is left behind", catalog.FlowsTable)
	}
}
