package flow

import (
	"slices"
	"testing"
)

// Every kind of flow parses to its Kind, and the kind says which objects
// it gets beside its view.
func TestKind(t *testing.T) {
	for _, tt := range []struct {
		src               string
		want              Kind
		snapshot, history bool
		changeFeed        bool
		routines          []string
	}{
		{"AUTO CDC INTO t FROM STREAM(topic) KEYS (id) SEQUENCE BY s;", SCD1, false, false, true, []string{"_at", "_changes"}},
		{"AUTO CDC INTO t FROM STREAM(topic) KEYS (id) SEQUENCE BY s STORED AS SCD TYPE 2;", SCD2, false, true, true, []string{"_at", "_changes"}},
		{"AUTO CDC INTO t FROM STREAM(topic) KEYS (id) SEQUENCE BY s SYSTEM SEQUENCE BY i STORED AS BITEMPORAL;", Bitemporal, false, true, false, []string{"_as_of"}},
		{"AUTO CDC FROM SNAPSHOT INTO t FROM staging.c KEYS (id) VERSION BY v;", SnapshotSCD1, true, false, false, nil},
		{"AUTO CDC FROM SNAPSHOT INTO t FROM staging.c KEYS (id) VERSION BY v STORED AS SCD TYPE 2;", SnapshotSCD2, true, true, false, nil},
	} {
		flows, err := Parse("k.sql", tt.src)
		if err != nil {
			t.Fatal(err)
		}
		k := flows[0].Kind()
		if k != tt.want || k.Snapshot() != tt.snapshot || k.History() != tt.history || k.ChangeFeed() != tt.changeFeed || !slices.Equal(k.Routines(), tt.routines) {
			t.Errorf("%s: kind %s (snapshot %v, history %v, change feed %v, routines %v), want %s (%v, %v, %v, %v)",
				tt.src, k, k.Snapshot(), k.History(), k.ChangeFeed(), k.Routines(), tt.want, tt.snapshot, tt.history, tt.changeFeed, tt.routines)
		}
		if k.String() == "invalid" {
			t.Errorf("%s: kind %d has no name", tt.src, k)
		}
	}
	if Kind(0).String() != "invalid" {
		t.Error("the zero Kind has a name")
	}
}
