package apply

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
)

func TestMergeSchema(t *testing.T) {
	have := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "old", Type: schema.String},
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{{Name: "city", Type: schema.String}}}}
	want := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "email", Type: schema.String, Required: true},
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{{Name: "city", Type: schema.String}, {Name: "zip", Type: schema.String}}}}
	merged, added, err := MergeSchema(have, want)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"email", "addr.zip"}, added); d != "" {
		t.Errorf("added (-want +got):\n%s", d)
	}
	if got := merged.Names(); !cmp.Equal(got, []string{"id", "old", "addr", "email"}) {
		t.Errorf("merged = %v", got)
	}
	if c, _ := merged.Lookup("email"); c.Required {
		t.Error("an added column must be NULLABLE")
	}
	if _, added, err := MergeSchema(merged, want); err != nil || len(added) != 0 {
		t.Errorf("second merge added %v (%v): not idempotent", added, err)
	}
	_, _, err = MergeSchema(have, schema.Columns{{Name: "id", Type: schema.String}})
	if err == nil || !strings.Contains(err.Error(), "column id changed type from INT64 to STRING") {
		t.Errorf("type change: %v", err)
	}
}

func TestChangelogColumnsFromDemoSchema(t *testing.T) {
	cols, err := ChangelogColumns(readFile(t, "../../schemas/dbserver1.inventory.customers-value.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "first_name", "last_name", "email", "tier", "balance", "birth_date", "updated_at",
		"_cdc_op", "_cdc_source_ts", "_cdc_sequence", "_cdc_ingested_at", "_cdc_publish_time", "_cdc_message_id", "_cdc_schema_id"}
	if d := cmp.Diff(want, cols.Names()); d != "" {
		t.Errorf("columns (-want +got):\n%s", d)
	}
}
