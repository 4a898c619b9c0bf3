package flow

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
)

// A deployment with a flow of every kind and a materialized view.
var claimFiles = map[string]string{
	"flows.sql": `
CREATE FLOW cur AS AUTO CDC INTO customers FROM STREAM(shop.customers) KEYS (id) SEQUENCE BY s;
CREATE FLOW hist AS AUTO CDC INTO hist.customers_history FROM STREAM(shop.customers) KEYS (id) SEQUENCE BY s STORED AS SCD TYPE 2;
CREATE FLOW bt AS AUTO CDC INTO customers_bt FROM STREAM(shop.customers) KEYS (id) SEQUENCE BY s SYSTEM SEQUENCE BY _cdc_ingested_at STORED AS BITEMPORAL;
CREATE FLOW snap AS AUTO CDC FROM SNAPSHOT INTO extracts FROM staging.extracts KEYS (id) VERSION BY loaded_at;
CREATE MATERIALIZED VIEW per_tier AS SELECT tier, COUNT(*) AS n FROM customers GROUP BY tier;
`,
}

// parseWith parses the deployment plus a new file, 0_new.sql, that sorts
// first (a new file must not take what a running flow holds).
func parseWith(newFile string) (Declarations, []error) {
	names := []string{"0_new.sql", "flows.sql"}
	srcs := map[string]string{"0_new.sql": newFile, "flows.sql": claimFiles["flows.sql"]}
	return ParseFilesAll(names, srcs)
}

// Every name a deployment holds is claimed once (issue 38): a new flow or
// materialized view taking one of them is refused at its name, naming the
// owner; a name another flow's or view's object takes refuses both
// (contested), whatever the file order. The names come from the one place
// that lists them (Flow.Objects, Gold.Objects, catalog.DeploymentTables,
// catalog.TableName), so a new object kind is covered without editing the
// test.
func TestEveryOwnedNameIsClaimed(t *testing.T) {
	d, errs := parseWith("")
	if len(errs) > 0 || len(d.Flows) != 4 || len(d.Golds) != 1 {
		t.Fatalf("the deployment: %v (%d flows, %d views)", errs, len(d.Flows), len(d.Golds))
	}
	type owned struct {
		obj   Object
		owner string // in the error
	}
	var names []owned
	for _, f := range d.Flows {
		for _, o := range f.Objects() {
			names = append(names, owned{o, "flow " + f.Name})
		}
	}
	for _, o := range d.Golds[0].Objects() {
		names = append(names, owned{o, "materialized view per_tier"})
	}
	for _, n := range catalog.DeploymentTables() {
		names = append(names, owned{Object{Name: n}, "bqcdc"})
	}
	names = append(names, owned{Object{Name: catalog.TableName("shop.customers")}, "changelog"})
	for _, n := range names {
		target := n.obj.Name
		if n.obj.Dataset != "" {
			target = n.obj.Dataset + "." + target
		}
		for _, decl := range []string{
			"CREATE FLOW intruder AS AUTO CDC INTO `" + target + "` FROM STREAM(shop.orders) KEYS (id) SEQUENCE BY s;",
			"CREATE MATERIALIZED VIEW `" + target + "` AS SELECT tier, COUNT(*) AS n FROM customers GROUP BY tier;",
		} {
			d, errs := parseWith(decl)
			var mine string
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), "0_new.sql:1:") {
					mine = e.Error()
				}
			}
			if mine == "" {
				t.Errorf("%s %s (%s) taken by %q: accepted", n.obj.What, target, n.owner, decl)
				continue
			}
			if !strings.Contains(mine, n.owner) && !strings.Contains(mine, "names ending with") && !strings.Contains(mine, "names starting with") {
				t.Errorf("%s taken: %q names neither the owner (%s) nor the reserved name", target, mine, n.owner)
			}
			for _, f := range d.Flows {
				if f.Name == "intruder" {
					t.Errorf("%s: the intruder was kept", target)
				}
			}
		}
	}
}

// Reserved prefixes and suffixes are refused even when no owner exists.
func TestReservedNamesWithoutOwner(t *testing.T) {
	for _, target := range []string{"nobody__state", "nobody__changes", "nobody__final", "_bqcdc_mine", "_BQCDC_DEAD_LETTERS", "dbserver1_inventory_gone_changelog"} {
		_, errs := parseWith("CREATE FLOW intruder AS AUTO CDC INTO " + target + " FROM STREAM(shop.orders) KEYS (id) SEQUENCE BY s;")
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "0_new.sql:1:39: flow intruder: target "+target+": names") {
			t.Errorf("%s: %v", target, errs)
		}
	}
	// A changelog's suffix is the default dataset's alone.
	if _, errs := parseWith("CREATE FLOW mine AS AUTO CDC INTO other.my_changelog FROM STREAM(shop.orders) KEYS (id) SEQUENCE BY s;"); len(errs) != 0 {
		t.Errorf("other.my_changelog: %v", errs)
	}
}

// Of two flows writing one target both are refused, each naming the
// other, in either file order; a materialized view named like a flow's
// table function refuses both too. The flows refused only for each other
// are Contested (bqcdc apply keeps the one the deployed view names).
func TestTargetOwnershipIsNotFileOrder(t *testing.T) {
	d, errs := parseWith("CREATE FLOW newcomer AS AUTO CDC INTO customers FROM STREAM(shop.orders) KEYS (id) SEQUENCE BY s;")
	if len(errs) != 2 {
		t.Fatalf("errors %v, want the newcomer and cur refused", errs)
	}
	for _, want := range []string{"flow newcomer: its view customers is also the view customers of flow cur", "flow cur: its view customers is also the view customers of flow newcomer"} {
		if !strings.Contains(errs[0].Error()+"\n"+errs[1].Error(), want) {
			t.Errorf("want %q in %v", want, errs)
		}
	}
	var contested []string
	for _, f := range d.Contested {
		contested = append(contested, f.Name)
	}
	if strings.Join(contested, ",") != "cur,newcomer" && strings.Join(contested, ",") != "newcomer,cur" {
		t.Errorf("contested %v, want cur and newcomer", contested)
	}
	for _, f := range d.Flows {
		if f.Name == "cur" || f.Name == "newcomer" {
			t.Errorf("flow %s kept", f.Name)
		}
	}
	// The materialized view over customers falls with cur's target.
	if len(d.Golds) != 1 {
		t.Errorf("views %d", len(d.Golds))
	}
}
