package model

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(e Event, minute int) Event {
	e.Ingested = t0.Add(time.Duration(minute) * time.Minute)
	return e
}

func scd1Snapshot(cfg Config) func([]Event) Snapshot {
	return func(events []Event) Snapshot {
		s := Snapshot{}
		for _, r := range SCD1(events, cfg) {
			s[KeyString(r.Key)] = fmt.Sprint(r.Values)
		}
		return s
	}
}

func scd2Snapshot(cfg Config) func([]Event) Snapshot {
	return func(events []Event) Snapshot {
		s := Snapshot{}
		for _, v := range SCD2(events, cfg) {
			s[KeyString(v.Key)+fmt.Sprint(v.Start)] = fmt.Sprint(v.Values, v.End)
		}
		return s
	}
}

func TestChangesSCD1(t *testing.T) {
	cfg := Config{Values: []string{"name"}}
	events := []Event{
		at(ev(1, 1, "m1", Upsert, map[string]any{"name": "a"}), 1),
		at(ev(1, 3, "m3", Upsert, map[string]any{"name": "c"}), 2),
		at(ev(1, 2, "m2", Upsert, map[string]any{"name": "b"}), 3), // stale: nothing
		at(ev(1, 3, "m3", Upsert, map[string]any{"name": "c"}), 4), // redelivered: nothing
		at(ev(1, 4, "m4", Upsert, map[string]any{"name": "c"}), 5), // same values: nothing
		at(ev(2, 1, "m5", Upsert, map[string]any{"name": "x"}), 5),
		at(ev(1, 5, "m6", Delete, nil), 6),
	}
	got := Changes(events, time.Time{}, t0.Add(time.Hour), scd1Snapshot(cfg))
	k1, k2 := KeyString([]any{int64(1)}), KeyString([]any{int64(2)})
	want := []Change{
		{Insert, t0.Add(1 * time.Minute), k1, "map[name:a]"},
		{UpdatePreimage, t0.Add(2 * time.Minute), k1, "map[name:a]"},
		{UpdatePostimage, t0.Add(2 * time.Minute), k1, "map[name:c]"},
		{Insert, t0.Add(5 * time.Minute), k2, "map[name:x]"},
		{Remove, t0.Add(6 * time.Minute), k1, "map[name:c]"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	// Reading in two halves gives the same feed.
	mid := t0.Add(3 * time.Minute)
	halves := append(Changes(events, time.Time{}, mid, scd1Snapshot(cfg)), Changes(events, mid, t0.Add(time.Hour), scd1Snapshot(cfg))...)
	if d := cmp.Diff(want, halves); d != "" {
		t.Errorf("changes read in two halves (-want +got):\n%s", d)
	}
}

// Replaying the feed onto an empty table gives the target, for random
// histories (late, duplicate and deleted events), SCD 1 and SCD 2, read in
// one piece or in several.
func TestReplayReproducesTarget(t *testing.T) {
	cfg := Config{Values: []string{"name", "city"}, IgnoreNull: map[string]bool{"city": true}, Tracked: map[string]bool{"name": true}}
	for seed := int64(0); seed < 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		var events []Event
		for i := 0; i < 30; i++ {
			op := Upsert
			if r.Intn(5) == 0 {
				op = Delete
			}
			e := ev(int64(r.Intn(3)), int64(r.Intn(10)), fmt.Sprintf("m%d", r.Intn(40)), op,
				map[string]any{"name": []any{"a", "b", nil}[r.Intn(3)], "city": []any{"x", nil}[r.Intn(2)]})
			events = append(events, at(e, r.Intn(20)))
		}
		end := t0.Add(time.Hour)
		cut := t0.Add(time.Duration(r.Intn(20)) * time.Minute)
		for name, target := range map[string]func([]Event) Snapshot{"scd1": scd1Snapshot(cfg), "scd2": scd2Snapshot(cfg)} {
			want := target(events)
			if d := cmp.Diff(want, Replay(nil, Changes(events, time.Time{}, end, target))); d != "" {
				t.Fatalf("seed %d %s: replay differs from the target (-want +got):\n%s", seed, name, d)
			}
			first := Replay(nil, Changes(events, time.Time{}, cut, target))
			if d := cmp.Diff(want, Replay(first, Changes(events, cut, end, target))); d != "" {
				t.Fatalf("seed %d %s: incremental replay differs (-want +got):\n%s", seed, name, d)
			}
		}
	}
}
