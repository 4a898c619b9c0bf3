package bqschema

import (
	"strings"
	"testing"
	"unicode/utf8"

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

// Descriptions longer than BigQuery's 1,024 characters are cut at a
// character (not a byte) boundary, marked with "…"; shorter ones are kept.
func TestDescriptionCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int // characters
	}{
		{"short", 5},
		{strings.Repeat("a", 1024), 1024},
		{strings.Repeat("é", 1024), 1024},
		{strings.Repeat("é", 1025), 1024},
		{strings.Repeat("日本", 5000), 1024},
	} {
		got := ToBigQuery(schema.Columns{{Name: "c", Type: schema.String, Description: tc.in}})[0].Description
		if n := utf8.RuneCountInString(got); n != tc.want || !utf8.ValidString(got) {
			t.Errorf("%d characters in: %d out (valid UTF-8 %v), want %d", utf8.RuneCountInString(tc.in), n, utf8.ValidString(got), tc.want)
		}
		if utf8.RuneCountInString(tc.in) > 1024 && !strings.HasSuffix(got, "…") {
			t.Errorf("a cut description does not say so: ...%s", got[len(got)-8:])
		}
	}
}
