package schema

import "testing"

func TestColumnCapabilities(t *testing.T) {
	tests := []struct {
		col                           Column
		orderable, groupable, equates bool
	}{
		{Column{Type: Int64}, true, true, true},
		{Column{Type: Timestamp}, true, true, true},
		{Column{Type: Float64}, true, false, true},
		{Column{Type: JSON}, false, false, false},
		{Column{Type: String, Repeated: true}, false, false, false},
		{Column{Type: Record, Fields: []Column{{Name: "a", Type: Int64}}}, false, true, true},
		{Column{Type: Record, Fields: []Column{{Name: "a", Type: Int64, Repeated: true}}}, false, false, false},
	}
	for _, tt := range tests {
		if tt.col.Orderable() != tt.orderable || tt.col.Groupable() != tt.groupable || tt.col.Equatable() != tt.equates {
			t.Errorf("%s: orderable/groupable/equatable = %v/%v/%v, want %v/%v/%v", tt.col.SQLType(),
				tt.col.Orderable(), tt.col.Groupable(), tt.col.Equatable(), tt.orderable, tt.groupable, tt.equates)
		}
	}
}

func TestSQLTypeAndLookup(t *testing.T) {
	c := Column{Name: "m", Type: Record, Repeated: true, Fields: []Column{{Name: "key", Type: String}, {Name: "value", Type: Int64}}}
	if got, want := c.SQLType(), "ARRAY<STRUCT<`key` STRING, `value` INT64>>"; got != want {
		t.Errorf("SQLType = %s, want %s", got, want)
	}
	cs := Columns{{Name: "Id"}, c}
	if _, ok := cs.Lookup("id"); !ok {
		t.Error("Lookup is case-sensitive; BigQuery column names are not")
	}
}
