package terraform_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The ingest account holds no dataset-wide data role: a custom role with
// the three table permissions ingest uses, on the dataset only under a
// condition naming the changelogs and the dead-letter table, and
// roles/pubsub.viewer on each listed Pub/Sub schema, never the project.
func TestIngestGrantsNarrow(t *testing.T) {
	cfg := config(t)
	root := cfg.module(t, ".")
	for dir, m := range cfg.modules {
		for key, r := range m.resources {
			if !strings.HasSuffix(r.Labels[0], "_iam_member") || !refersTo(attrExpr(r.Body, "member"), "google_service_account.ingest") {
				continue
			}
			role, _ := literalString(attrExpr(r.Body, "role"))
			switch {
			case role == "roles/bigquery.dataEditor" || role == "roles/bigquery.dataOwner" || role == "roles/bigquery.admin":
				t.Errorf("%s/%s: the ingest account holds %s", dir, key, role)
			case r.Labels[0] == "google_project_iam_member" && role != "roles/monitoring.metricWriter":
				t.Errorf("%s/%s: the ingest account holds %s on the project", dir, key, role)
			}
		}
	}

	custom := must(t, root.resources, "google_project_iam_custom_role.ingest_table_writer", "the root module must declare google_project_iam_custom_role.ingest_table_writer")
	perms := stringList(t, attrExpr(custom.Body, "permissions"))
	if want := []string{"bigquery.tables.get", "bigquery.tables.update", "bigquery.tables.updateData"}; !slices.Equal(perms, want) {
		t.Errorf("ingest_table_writer permissions %v, want %v", perms, want)
	}

	grant := must(t, root.resources, "google_bigquery_dataset_iam_member.ingest_writes_changelogs", "the root module must declare google_bigquery_dataset_iam_member.ingest_writes_changelogs")
	if !refersTo(attrExpr(grant.Body, "role"), "google_project_iam_custom_role.ingest_table_writer.name") {
		t.Errorf("ingest_writes_changelogs: role must be the custom role, got %v", references(attrExpr(grant.Body, "role")))
	}
	cond := childBody(grant.Body, "condition")
	expr := attrExpr(cond, "expression")
	if expr == nil {
		t.Fatal("ingest_writes_changelogs must have a condition limiting it to the changelogs and the dead letters")
	}
	src := exprSource(root.fileOf(expr.Range()), expr)
	for _, want := range []string{`resource.name.endsWith(\"_changelog\")`, `resource.name.endsWith(\"/tables/` + catalog.DeadLetterTable + `\")`,
		`resource.name.endsWith(\"/tables/` + catalog.AppendsTable + `\")`, "resource.name.startsWith"} {
		if !strings.Contains(src, want) {
			t.Errorf("ingest_writes_changelogs condition %s lacks %s", src, want)
		}
	}
	if got := catalog.TableName("a.b"); !strings.HasSuffix(got, "_changelog") {
		t.Errorf("changelog %s does not end in _changelog, as the grant's condition expects", got)
	}

	schemas := root.resources["google_pubsub_schema_iam_member.ingest_reads_pubsub_schemas"]
	if schemas == nil || !refersTo(attrExpr(schemas.Body, "for_each"), "var.pubsub_schemas") {
		t.Fatal("the ingest account must read Pub/Sub schemas through google_pubsub_schema_iam_member, for_each var.pubsub_schemas")
	}
	if role, _ := literalString(attrExpr(schemas.Body, "role")); role != "roles/pubsub.viewer" {
		t.Errorf("ingest_reads_pubsub_schemas: role %q, want roles/pubsub.viewer (on the schema)", role)
	}
}

// Only the push and scheduler accounts invoke, no grant names allUsers or
// allAuthenticatedUsers, and both functions default to internal ingress.
func TestNoPublicInvokers(t *testing.T) {
	cfg := config(t)
	for dir, m := range cfg.modules {
		for key, r := range m.resources {
			if !strings.Contains(r.Labels[0], "iam") {
				continue
			}
			for _, a := range []string{"member", "members"} {
				if e := attrExpr(r.Body, a); e != nil {
					if s := exprSource(m.fileOf(e.Range()), e); strings.Contains(s, "allUsers") || strings.Contains(s, "allAuthenticatedUsers") {
						t.Errorf("%s/%s grants %s to the public", dir, key, s)
					}
				}
			}
			if role, _ := literalString(attrExpr(r.Body, "role")); role == "roles/run.invoker" &&
				!refersTo(attrExpr(r.Body, "member"), "google_service_account.push") && !refersTo(attrExpr(r.Body, "member"), "google_service_account.scheduler") {
				t.Errorf("%s/%s: roles/run.invoker for an account other than push and scheduler", dir, key)
			}
		}
	}
	root := cfg.module(t, ".")
	v := root.variables["ingress_settings"]
	if def, _ := literalString(attrExpr(v.Body, "default")); def != "ALLOW_INTERNAL_ONLY" {
		t.Errorf("ingress_settings default %q, want ALLOW_INTERNAL_ONLY", def)
	}
}

// stringList reads a constant list of strings.
func stringList(t *testing.T, expr hclsyntax.Expression) []string {
	t.Helper()
	tup, ok := expr.(*hclsyntax.TupleConsExpr)
	if !ok {
		t.Fatalf("want a list of strings, got %T", expr)
	}
	var out []string
	for _, e := range tup.Exprs {
		s, ok := literalString(e)
		if !ok {
			t.Fatalf("want a constant string, got %T", e)
		}
		out = append(out, s)
	}
	return out
}
