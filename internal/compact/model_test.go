package compact

import (
	"math"
	"testing"

	"cloud.google.com/go/bigquery"
)

// The metadata model prices a table at its real bytes per row, spread
// over its columns in the proportions of the model's default sizes; a
// table without rows keeps the defaults.
func TestMetadataColumnsScaleToTheTablesBytes(t *testing.T) {
	md := &bigquery.TableMetadata{Schema: bigquery.Schema{{Name: "id", Type: bigquery.IntegerFieldType}, {Name: "s", Type: bigquery.StringFieldType}}}
	defaults := metadataColumns(md)
	if defaults[0].Bytes != 8 || defaults[1].Bytes != 18 {
		t.Fatalf("defaults: %+v", defaults)
	}
	md.NumRows, md.NumBytes = 1000, 1000*260
	cols := metadataColumns(md)
	if got := cols[0].Bytes + cols[1].Bytes; math.Abs(got-260) > 1e-9 {
		t.Errorf("row bytes %v, want the table's 260", got)
	}
	if math.Abs(cols[1].Bytes/cols[0].Bytes-18.0/8) > 1e-9 {
		t.Errorf("proportions changed: %+v", cols)
	}
}
