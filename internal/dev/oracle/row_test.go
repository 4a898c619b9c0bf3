package oracle

import (
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
)

func TestRow(t *testing.T) {
	at := time.UnixMicro(1_700_000_000_000_001)
	got := Row(map[string]any{"id": int64(1)}, Meta{Op: cdc.OpCreate, SourceTS: at, Sequence: "00", IngestedAt: at, PublishTime: at, MessageID: "m1", SchemaID: 3})
	want := map[string]any{"id": int64(1), catalog.ColOp: "c", catalog.ColSourceTS: at.UnixMicro(), catalog.ColSequence: "00", catalog.ColIngestedAt: at.UnixMicro(),
		catalog.ColPublishTime: at.UnixMicro(), catalog.ColMessageID: "m1", catalog.ColSchemaID: int64(3)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Row (-want +got):\n%s", d)
	}
	// A non-Debezium record has no op, no source time and no transaction:
	// those stay NULL.
	got = Row(nil, Meta{IngestedAt: at, Sequence: "01"})
	if _, ok := got[catalog.ColOp]; ok || got[catalog.ColSequence] != "01" {
		t.Errorf("plain record row = %v", got)
	}
	if _, ok := got[catalog.ColTransaction]; ok {
		t.Errorf("row without a transaction block has %s = %v", catalog.ColTransaction, got[catalog.ColTransaction])
	}
}

func TestRowTransaction(t *testing.T) {
	tx := &cdc.Transaction{ID: "571", TotalOrder: 3, DataCollectionOrder: 1}
	got := Row(map[string]any{}, Meta{Op: cdc.OpUpdate, Transaction: tx})[catalog.ColTransaction]
	want := map[string]any{"id": "571", "total_order": int64(3), "data_collection_order": int64(1)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", catalog.ColTransaction, d)
	}
	// The value's fields are exactly the column's, so the writer can encode it.
	col, ok := catalog.MetadataColumns().Lookup(catalog.ColTransaction)
	if !ok || col.Type != schema.Record {
		t.Fatalf("%s column = %+v", catalog.ColTransaction, col)
	}
	var fields []string
	for _, f := range col.Fields {
		fields = append(fields, f.Name)
		if _, ok := want[f.Name]; !ok || f.Description == "" {
			t.Errorf("field %s.%s: in row %v, description %q", catalog.ColTransaction, f.Name, ok, f.Description)
		}
	}
	if len(fields) != len(want) {
		t.Errorf("%s fields = %v, row has %v", catalog.ColTransaction, fields, want)
	}
}
