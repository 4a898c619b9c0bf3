package apply

import (
	"context"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
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
	bq, lister, _ := fakeClients(t, 0)
	for i, opts := range []Options{{Lister: lister}, {Lister: lister}, {}} {
		var rep Report
		if _, err := AllWith(ctx, bq, testTarget, flows, schemas, opts, &rep); err != nil {
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

// A target already deployed stays with its flow: of a running flow and a
// new file's flow writing its target (both refused by the parse, in
// either file order), KeepDeployed keeps the one the deployed view names
// (catalog.FlowLabel, which apply writes) and leaves the newcomer refused;
// on a deployment that has neither, both stay refused (issue 38).
func TestKeepDeployedOwner(t *testing.T) {
	ctx := context.Background()
	flows, schemas := scaleDeployment(t, 2)
	bq, lister, _ := fakeClients(t, 0)
	var rep Report
	if _, err := AllWith(ctx, bq, testTarget, flows, schemas, Options{Lister: lister}, &rep); err != nil {
		t.Fatal(err)
	}
	names := []string{"0_new.sql", "table_000.sql", "table_001.sql"}
	srcs := map[string]string{
		"0_new.sql":     "CREATE FLOW newcomer AS AUTO CDC INTO t000_current FROM STREAM(`dbserver1.shop.table_001`) KEYS (id) SEQUENCE BY _cdc_sequence;",
		"table_000.sql": rendercases.ScaleFlowFile(0, "dbserver1.shop.table_000"),
		"table_001.sql": rendercases.ScaleFlowFile(1, "dbserver1.shop.table_001"),
	}
	d, refused := flow.ParseFilesAll(names, srcs)
	if len(d.Contested) != 2 || len(refused) != 2 {
		t.Fatalf("contested %v, refused %v", d.Contested, refused)
	}
	kept, still, keptFlows, err := KeepDeployed(ctx, bq, testLoc, d, refused)
	if err != nil {
		t.Fatal(err)
	}
	if len(keptFlows) != 1 || keptFlows[0].Name != "t000_current" || len(kept) != 4 || kept[0].Name != "t000_current" {
		t.Errorf("kept %v of %v, want t000_current back in file order", keptFlows, kept)
	}
	if len(still) != 1 || !strings.Contains(still[0].Error(), "flow newcomer:") {
		t.Errorf("still refused: %v, want the newcomer", still)
	}
	// A deployment where neither is deployed keeps neither.
	fbq, _ := fakeClient(t, 0)
	if _, _, keptFlows, err := KeepDeployed(ctx, fbq, testLoc, d, refused); err != nil || len(keptFlows) != 0 {
		t.Errorf("a fresh deployment kept %v (%v)", keptFlows, err)
	}
}

// The materialized views of a first apply too are made after what they
// read (their state's CREATE TABLE ... AS reads the source flow's change
// table; the refreshed view, the change feed and the status view read the
// state), on an empty dataset, against the fake that refuses a missing
// reference as BigQuery does; a second apply changes nothing.
func TestFirstApplyOfMaterializedViewsInOrder(t *testing.T) {
	ctx := context.Background()
	flows, schemas := scaleDeployment(t, 2)
	bq, lister, _ := fakeClients(t, 0)
	_, golds, err := flow.ParseAll("gold.sql", `
CREATE MATERIALIZED VIEW per_status AS SELECT status, COUNT(*) AS n, SUM(amount) AS total FROM t000_current GROUP BY status;
CREATE MATERIALIZED VIEW gold.per_day AS SELECT window(created_at, '1 day') AS day, COUNT(*) AS n FROM t001_current GROUP BY window(created_at, '1 day');`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var rep Report
		opts := Options{Lister: lister, StatusWithGolds: true}
		bound, err := AllWith(ctx, bq, testTarget, flows, schemas, opts, &rep)
		if err != nil {
			t.Fatalf("apply %d: %v", i+1, err)
		}
		bg, refused := flow.BindGolds(golds, bound, "cdc")
		if refused != nil || len(bg) != 2 {
			t.Fatalf("binding the views: %v", refused)
		}
		if err := Golds(ctx, bq, testLoc, bound, bg, opts, &rep); err != nil {
			t.Fatalf("apply %d, materialized views: %v", i+1, err)
		}
		if i == 1 {
			for _, line := range rep {
				if !strings.HasSuffix(line, ": unchanged") && !strings.HasSuffix(line, ": exists") {
					t.Errorf("apply 2 changed something: %q", line)
				}
			}
		}
	}
	for _, name := range []string{"per_status", "per_status__state", "per_status_refreshed", catalog.StatusView} {
		if _, err := bq.Dataset("cdc").Table(name).Metadata(ctx); err != nil {
			t.Errorf("%s after apply: %v", name, err)
		}
	}
}
