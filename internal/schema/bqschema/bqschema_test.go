package bqschema

import (
	"testing"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
)

func TestRoundTrip(t *testing.T) {
	cols := schema.Columns{
		{Name: "id", Type: schema.Int64, Required: true, Description: "key"},
		{Name: "price", Type: schema.Numeric, Precision: 10, Scale: 2},
		{Name: "tags", Type: schema.String, Repeated: true},
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{{Name: "city", Type: schema.String}, {Name: "at", Type: schema.Datetime}}},
		{Name: "doc", Type: schema.JSON}, {Name: "ts", Type: schema.Timestamp}, {Name: "d", Type: schema.Date}, {Name: "t", Type: schema.Time},
		{Name: "b", Type: schema.Bool}, {Name: "f", Type: schema.Float64}, {Name: "raw", Type: schema.Bytes}, {Name: "big", Type: schema.BigNumeric},
	}
	if d := cmp.Diff(cols, FromBigQuery(ToBigQuery(cols))); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

func TestLegacyNames(t *testing.T) {
	in := bigquery.Schema{{Name: "f", Type: "FLOAT64"}, {Name: "r", Type: "STRUCT", Schema: bigquery.Schema{{Name: "i", Type: "INT64"}, {Name: "b", Type: "BOOL"}}}}
	got := LegacyNames(in)
	if got[0].Type != bigquery.FloatFieldType || got[1].Type != bigquery.RecordFieldType ||
		got[1].Schema[0].Type != bigquery.IntegerFieldType || got[1].Schema[1].Type != bigquery.BooleanFieldType || in[0].Type != "FLOAT64" {
		t.Errorf("LegacyNames = %v (input %v)", got, in)
	}
	if c := FromBigQuery(bigquery.Schema{{Name: "f", Type: bigquery.FloatFieldType}, {Name: "g", Type: "FLOAT64"}}); c[0].Type != schema.Float64 || c[1].Type != schema.Float64 {
		t.Errorf("FromBigQuery of both float spellings = %v", c)
	}
}
