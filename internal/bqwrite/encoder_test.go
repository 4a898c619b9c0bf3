package bqwrite

import (
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

func TestEncoderRoundTrip(t *testing.T) {
	s := bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
		{Name: "price", Type: bigquery.NumericFieldType},
		{Name: "at", Type: bigquery.DateTimeFieldType},
		{Name: "t", Type: bigquery.TimeFieldType},
		{Name: "d", Type: bigquery.DateFieldType},
		{Name: "ts", Type: bigquery.TimestampFieldType},
		{Name: "f", Type: "FLOAT64"}, // as the emulator reports a FLOAT64 column
		{Name: "tags", Type: bigquery.StringFieldType, Repeated: true},
		{Name: "addr", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{{Name: "city", Type: bigquery.StringFieldType}}},
	}
	enc, err := NewEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]any{"id": int64(7), "price": "12.50", "at": "2024-05-06 07:08:09.000000", "t": "07:08:09.000000",
		"d": int32(19849), "ts": int64(1_700_000_000_000_000), "f": 1.5, "tags": []any{"a", "b"},
		"addr": map[string]any{"city": "Oslo"}}
	b, err := enc.Encode(row)
	if err != nil {
		t.Fatal(err)
	}
	msg := dynamicpb.NewMessage(enc.md)
	if err := proto.Unmarshal(b, msg); err != nil {
		t.Fatal(err)
	}
	get := func(name string) protoreflect.Value { return msg.Get(enc.md.Fields().ByName(protoreflect.Name(name))) }
	if get("id").Int() != 7 || get("price").String() != "12.50" || get("at").String() != "2024-05-06 07:08:09.000000" ||
		get("d").Int() != 19849 || get("ts").Int() != 1_700_000_000_000_000 || get("f").Float() != 1.5 ||
		get("tags").List().Len() != 2 || get("addr").Message().Get(enc.md.Fields().ByName("addr").Message().Fields().ByName("city")).String() != "Oslo" {
		t.Errorf("decoded row = %v", msg)
	}
	for name, bad := range map[string]map[string]any{
		"unknown column": {"id": int64(1), "nope": "x"},
		"wrong type":     {"id": "seven"},
		"required NULL":  {"price": "1.00"},
	} {
		if _, err := enc.Encode(bad); !errors.Is(err, ErrEncode) {
			t.Errorf("%s: err = %v, want ErrEncode", name, err)
		}
	}
}

func TestDecodeInvertsEncode(t *testing.T) {
	s := bigquery.Schema{
		{Name: "id", Type: bigquery.IntegerFieldType},
		{Name: "name", Type: bigquery.StringFieldType},
		{Name: "d", Type: bigquery.DateFieldType},
		{Name: "tags", Type: bigquery.StringFieldType, Repeated: true},
		{Name: "r", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{{Name: "x", Type: bigquery.FloatFieldType}}},
	}
	enc, err := NewEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]any{"id": int64(7), "name": "n", "d": int32(19000), "tags": []any{"a", "b"}, "r": map[string]any{"x": 1.5}}
	b, err := enc.Encode(row)
	if err != nil {
		t.Fatal(err)
	}
	got, err := enc.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(row, got); d != "" {
		t.Errorf("Decode(Encode(row)) (-want +got):\n%s", d)
	}
}

// Tables of one schema share an encoder; a schema that differs in what
// the rows encode to (a name, a type) gets its own, descriptions aside.
func TestSharedEncoder(t *testing.T) {
	s := func(name, typ, desc string) bigquery.Schema {
		return bigquery.Schema{{Name: "id", Type: bigquery.IntegerFieldType}, {Name: name, Type: bigquery.FieldType(typ), Description: desc}}
	}
	a, err := SharedEncoder(s("v", "STRING", ""))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SharedEncoder(s("v", "STRING", "described"))
	c, _ := SharedEncoder(s("w", "STRING", ""))
	d, _ := SharedEncoder(s("v", "INTEGER", ""))
	if a != b {
		t.Error("two tables of one schema (descriptions aside) got two encoders")
	}
	if a == c || a == d || c == d {
		t.Error("tables of different schemas share an encoder")
	}
}

// A table's metadata is trusted between RefreshEvery and 1.5 times it, at
// random, so the tables of a fleet do not all come due at once.
func TestRefreshIsSpread(t *testing.T) {
	w := &Writer{RefreshEvery: 10 * time.Minute}
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		d := w.trustFor()
		if d < w.RefreshEvery || d > w.RefreshEvery*3/2 {
			t.Fatalf("trusted for %v, want between %v and %v", d, w.RefreshEvery, w.RefreshEvery*3/2)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < 4*time.Minute {
		t.Errorf("1,000 tables' refreshes spread over only %v", hi-lo)
	}
	if (&Writer{}).trustFor() != 0 {
		t.Error("RefreshEvery 0 must read every time")
	}
}
