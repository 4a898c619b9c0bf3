package evolve

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
)

func col(name, typ string) schema.Column { return schema.Column{Name: name, Type: typ} }

func TestMerge(t *testing.T) {
	table := schema.Columns{col("id", schema.Int64), col("old", schema.String),
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{col("city", schema.String)}}}
	writer := schema.Columns{col("ID", schema.Int64), {Name: "email", Type: schema.String, Required: true},
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{col("city", schema.String), {Name: "zip", Type: schema.String, Required: true}}},
		{Name: "geo", Type: schema.Record, Required: true, Fields: []schema.Column{{Name: "lat", Type: schema.Float64, Required: true}}}}
	merged, added, err := Merge(table, writer)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"email", "addr.zip", "geo"}, added); d != "" {
		t.Errorf("added (-want +got):\n%s", d)
	}
	if got := merged.Names(); !cmp.Equal(got, []string{"id", "old", "addr", "email", "geo"}) {
		t.Errorf("merged = %v (the table's spelling and order come first; dropped columns stay)", got)
	}
	for _, c := range merged {
		if c.Required || (len(c.Fields) > 0 && c.Fields[len(c.Fields)-1].Required) {
			t.Errorf("added column %s must be NULLABLE all the way down", c.Name)
		}
	}
	if _, again, err := Merge(merged, writer); err != nil || len(again) != 0 {
		t.Errorf("second merge added %v (%v): not idempotent", again, err)
	}
}

func TestConflicts(t *testing.T) {
	table := schema.Columns{col("id", schema.Int64), col("price", schema.Numeric), col("ts", schema.Timestamp),
		{Name: "tags", Type: schema.String, Repeated: true},
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{col("zip", schema.Int64)}}}
	for _, tc := range []struct {
		writer schema.Column
		want   string
	}{
		{col("id", schema.String), "column id: the changelog has INT64, the writer schema has STRING"},
		{col("price", schema.Float64), "column price: the changelog has NUMERIC, the writer schema has FLOAT64"},
		{col("price", schema.BigNumeric), "column price: the changelog has NUMERIC, the writer schema has BIGNUMERIC"},
		{col("ts", schema.Datetime), "column ts: the changelog has TIMESTAMP, the writer schema has DATETIME"},
		{col("tags", schema.String), "column tags: the changelog has ARRAY<STRING>, the writer schema has STRING"},
		{col("addr", schema.String), "between RECORD and a scalar type"},
		{schema.Column{Name: "addr", Type: schema.Record, Fields: []schema.Column{col("zip", schema.String)}},
			"column addr.zip: the changelog has INT64, the writer schema has STRING"},
	} {
		_, _, err := Merge(table, schema.Columns{tc.writer})
		var c *Conflict
		if !errors.As(err, &c) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Merge(%s %s) = %v, want a conflict containing %q", tc.writer.Name, tc.writer.SQLType(), err, tc.want)
		}
		if _, err := NewFitter(table, schema.Columns{tc.writer}); !errors.As(err, &c) {
			t.Errorf("NewFitter(%s %s) = %v, want the same conflict", tc.writer.Name, tc.writer.SQLType(), err)
		}
	}
}

func TestFit(t *testing.T) {
	table := schema.Columns{col("Id", schema.Int64), col("score", schema.Float64), col("amount", schema.BigNumeric),
		col("big", schema.Numeric), col("note", schema.String), col("raw", schema.Bytes), col("gone", schema.String),
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{col("zip", schema.Float64)}},
		{Name: "lines", Type: schema.Record, Repeated: true, Fields: []schema.Column{col("qty", schema.Numeric)}}}
	writer := schema.Columns{col("id", schema.Int64), col("score", schema.Int64), col("amount", schema.Numeric),
		col("big", schema.Int64), col("note", schema.Bytes), col("raw", schema.String), col("extra", schema.String),
		{Name: "addr", Type: schema.Record, Fields: []schema.Column{col("zip", schema.Int64), col("plus4", schema.Int64)}},
		{Name: "lines", Type: schema.Record, Repeated: true, Fields: []schema.Column{col("qty", schema.Int64)}}}
	f, err := NewFitter(table, writer)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"extra", "addr.plus4"}, f.Missing()); d != "" {
		t.Errorf("missing (-want +got):\n%s", d)
	}
	got, dropped, err := f.Fit(map[string]any{
		"id": int64(7), "score": int64(1 << 40), "amount": "12.50", "big": int64(-3), "note": []byte("héllo"), "raw": "x",
		"extra": "lost", "addr": map[string]any{"zip": int64(12345), "plus4": int64(6789)},
		"lines": []any{map[string]any{"qty": int64(2)}, map[string]any{"qty": int64(5)}}, "_cdc_op": "u",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"Id": int64(7), "score": float64(1 << 40), "amount": "12.50", "big": "-3", "note": "héllo", "raw": []byte("x"),
		"addr": map[string]any{"zip": float64(12345)}, "lines": []any{map[string]any{"qty": "2"}, map[string]any{"qty": "5"}},
		"_cdc_op": "u",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fit (-want +got):\n%s", d)
	}
	if dropped != 2 {
		t.Errorf("dropped = %d, want 2 (extra and addr.plus4)", dropped)
	}
	if _, _, err := f.Fit(map[string]any{"note": []byte{0xff, 0xfe}}); err == nil || !strings.Contains(err.Error(), "column note: bytes are not valid UTF-8") {
		t.Errorf("invalid UTF-8 into STRING: %v", err)
	}
}

func TestFitIdentity(t *testing.T) {
	cols := schema.Columns{col("id", schema.Int64), {Name: "addr", Type: schema.Record, Fields: []schema.Column{col("zip", schema.Int64)}}}
	f, err := NewFitter(append(cols, col("dropped_by_source", schema.String)), cols)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Identity() {
		t.Error("same columns (plus table-only ones) must fit as is")
	}
	in := map[string]any{"id": int64(1)}
	if out, _, _ := f.Fit(in); out["id"] != int64(1) {
		t.Errorf("fit = %v", out)
	}
}

// Several writers' columns together must stay within BigQuery's limit.
func TestMergeColumnLimit(t *testing.T) {
	table := schema.Columns{{Name: "r", Type: schema.Record, Fields: make(schema.Columns, limits.MaxColumns-3)}}
	for i := range table[0].Fields {
		table[0].Fields[i] = schema.Column{Name: fmt.Sprintf("f%d", i), Type: schema.Int64}
	}
	ok := schema.Columns{{Name: "a", Type: schema.Int64}, {Name: "b", Type: schema.Int64}}
	if _, added, err := Merge(table, ok); err != nil || len(added) != 2 {
		t.Fatalf("to exactly %d columns: %v, %v", limits.MaxColumns, added, err)
	}
	over := append(ok, schema.Column{Name: "c", Type: schema.Int64})
	if _, _, err := Merge(table, over); !errors.Is(err, limits.ErrLimit) {
		t.Errorf("past %d columns: err = %v, want a limits error", limits.MaxColumns, err)
	}
	nested := schema.Columns{{Name: "r", Type: schema.Record, Fields: schema.Columns{{Name: "x", Type: schema.Int64}, {Name: "y", Type: schema.Int64}, {Name: "z", Type: schema.Int64}}}}
	if _, _, err := Merge(table, nested); !errors.Is(err, limits.ErrLimit) {
		t.Errorf("past %d columns in a RECORD: err = %v, want a limits error", limits.MaxColumns, err)
	}
}
