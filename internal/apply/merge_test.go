package apply

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/google/go-cmp/cmp"
)

func TestChangelogColumnsFromDemoSchema(t *testing.T) {
	cols, err := ChangelogColumns(testfile.Read(t, "../../schemas/dbserver1.inventory.customers-value.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "first_name", "last_name", "email", "tier", "balance", "birth_date", "updated_at",
		"_cdc_op", "_cdc_source_ts", "_cdc_sequence", "_cdc_ingested_at", "_cdc_publish_time", "_cdc_message_id", "_cdc_schema_id", "_cdc_transaction"}
	if d := cmp.Diff(want, cols.Names()); d != "" {
		t.Errorf("columns (-want +got):\n%s", d)
	}
}
