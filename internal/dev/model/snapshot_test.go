package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func srow(key, version int64, name, city string) SnapshotRow {
	return SnapshotRow{Key: []any{key}, Version: version, Values: map[string]any{"name": name, "city": city}}
}

// The documented Databricks examples (AUTO CDC FROM SNAPSHOT) and the
// cases between them, against the model's snapshot semantics.
func TestSnapshotSCD1(t *testing.T) {
	cfg := Config{Values: []string{"name", "city"}}
	rows := []SnapshotRow{
		srow(2, 2, "b", "Carmel"), srow(3, 2, "c", "Los Angeles"), srow(4, 2, "d", "Death Valley"),
		srow(1, 1, "a", "Oaxaca"), srow(2, 1, "b", "Monterrey"), srow(3, 1, "c", "Tijuana"),
	}
	want := []Row{
		{Key: []any{int64(2)}, Values: map[string]any{"name": "b", "city": "Carmel"}},
		{Key: []any{int64(3)}, Values: map[string]any{"name": "c", "city": "Los Angeles"}},
		{Key: []any{int64(4)}, Values: map[string]any{"name": "d", "city": "Death Valley"}},
	}
	if d := cmp.Diff(want, SnapshotSCD1(rows, cfg)); d != "" {
		t.Errorf("SnapshotSCD1 (-want +got):\n%s", d)
	}
	if got := SnapshotSCD1(nil, cfg); got != nil {
		t.Errorf("no snapshot: %v", got)
	}
}

func TestSnapshotSCD2(t *testing.T) {
	cfg := Config{Values: []string{"name", "city"}, Tracked: map[string]bool{"name": true}}
	rows := []SnapshotRow{
		srow(1, 10, "a", "x"), srow(2, 10, "p", "q"),
		srow(1, 20, "a", "y"),                        // untracked change: in place
		srow(1, 30, "b", "y"), srow(2, 30, "p", "q"), // key 2 missing from 20: deleted there, back at 30
		// key 1 missing from 40: closed there
		srow(2, 40, "p", "q"), srow(3, 40, "n", "m"),
		srow(1, 50, "b", "y"), srow(3, 50, "o", "m"),
	}
	v := func(key int64, start int64, end any, name, city string) Version {
		out := Version{Key: []any{key}, Start: []any{start}, Values: map[string]any{"name": name, "city": city}}
		if end != nil {
			out.End = []any{end}
		}
		return out
	}
	want := []Version{
		v(1, 10, int64(30), "a", "y"),
		v(1, 30, int64(40), "b", "y"),
		v(1, 50, nil, "b", "y"),
		v(2, 10, int64(20), "p", "q"),
		v(2, 30, int64(50), "p", "q"), // missing from 50
		v(3, 40, int64(50), "n", "m"),
		v(3, 50, nil, "o", "m"),
	}
	if d := cmp.Diff(want, SnapshotSCD2(rows, cfg)); d != "" {
		t.Errorf("SnapshotSCD2 (-want +got):\n%s", d)
	}
}
