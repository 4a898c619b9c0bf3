package terraform_test

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The pubsub_dead_letters table Terraform creates has the layout package
// catalog defines (the local stack creates it from catalog, and both must
// be what a BigQuery subscription with write_metadata writes).
func TestPubSubDeadLetterTableMatchesCatalog(t *testing.T) {
	root := config(t).module(t, ".")
	res := must(t, root.resources, "google_bigquery_table.dead_letters", "no google_bigquery_table.dead_letters in the root module")
	if id, _ := literalString(attrExpr(res.Body, "table_id")); id != catalog.PubSubDeadLetterTable {
		t.Errorf("table_id = %q, want %q", id, catalog.PubSubDeadLetterTable)
	}
	call, ok := attrExpr(res.Body, "schema").(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "jsonencode" || len(call.Args) != 1 {
		t.Fatal("schema must be jsonencode([...]) of literal columns")
	}
	v, diags := call.Args[0].Value(nil)
	if diags.HasErrors() {
		t.Fatalf("evaluating the schema: %v", diags)
	}
	type col struct{ Name, Type, Mode, Description string }
	var got []col
	for it := v.ElementIterator(); it.Next(); {
		_, f := it.Element()
		s := func(k string) string { return f.GetAttr(k).AsString() }
		got = append(got, col{s("name"), s("type"), s("mode"), s("description")})
	}
	var want []col
	for _, c := range catalog.PubSubDeadLetterColumns() {
		want = append(want, col{c.Name, c.Type, "NULLABLE", c.Description})
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("pubsub_dead_letters schema in Terraform (-catalog +terraform):\n%s", d)
	}
}
