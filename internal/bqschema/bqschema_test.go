package bqschema

import (
	"testing"

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
