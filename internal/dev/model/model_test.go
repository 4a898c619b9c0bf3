package model

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ev(key int64, seq int64, msg string, op Op, vals map[string]any) Event {
	return Event{Key: []any{key}, Seq: []any{seq}, MsgID: msg, Op: op, Values: vals}
}

func TestSCD1(t *testing.T) {
	cfg := Config{Values: []string{"name", "city"}, IgnoreNull: map[string]bool{"city": true}}
	events := []Event{
		ev(1, 1, "m1", Upsert, map[string]any{"name": "a", "city": "x"}),
		ev(1, 3, "m3", Upsert, map[string]any{"name": "c", "city": nil}), // NULL city ignored
		ev(1, 2, "m2", Upsert, map[string]any{"name": "b", "city": "y"}), // late
		ev(2, 1, "m4", Upsert, map[string]any{"name": "d", "city": "z"}),
		ev(2, 2, "m5", Delete, nil),
		ev(2, 1, "m6", Upsert, map[string]any{"name": "old", "city": "q"}), // older than the delete: no resurrection
		ev(3, 1, "m7", Upsert, map[string]any{"name": "e", "city": "w"}),
		ev(3, 2, "m8", Delete, nil),
		ev(3, 3, "m9", Upsert, map[string]any{"name": "f", "city": nil}), // after a delete: NULL stays NULL
		ev(1, 3, "m3", Upsert, map[string]any{"name": "c", "city": nil}), // redelivered
	}
	want := []Row{
		{Key: []any{int64(1)}, Values: map[string]any{"name": "c", "city": "y"}},
		{Key: []any{int64(3)}, Values: map[string]any{"name": "f", "city": nil}},
	}
	if d := cmp.Diff(want, SCD1(events, cfg)); d != "" {
		t.Errorf("SCD1 (-want +got):\n%s", d)
	}
	// A truncate at sequence 2 (message t1 sorts after m2) removes what is
	// older, including the non-NULL city at sequence 2; later events apply.
	trunc := Event{Key: []any{nil}, Seq: []any{int64(2)}, MsgID: "t1", Op: Truncate}
	got := SCD1(append(events, trunc), cfg)
	want = []Row{
		{Key: []any{int64(1)}, Values: map[string]any{"name": "c", "city": nil}},
		{Key: []any{int64(3)}, Values: map[string]any{"name": "f", "city": nil}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("SCD1 with truncate (-want +got):\n%s", d)
	}
}

func TestSCD2(t *testing.T) {
	cfg := Config{Values: []string{"name", "city"}, Tracked: map[string]bool{"name": true}}
	events := []Event{
		ev(1, 1, "m1", Upsert, map[string]any{"name": "a", "city": "x"}),
		ev(1, 3, "m3", Upsert, map[string]any{"name": "a", "city": "y"}), // untracked change: in place
		ev(1, 5, "m5", Upsert, map[string]any{"name": "b", "city": "y"}),
		ev(1, 4, "m4", Upsert, map[string]any{"name": "z", "city": "y"}), // late: re-cuts [1,5)
		ev(1, 7, "m7", Delete, nil),
		ev(1, 9, "m9", Upsert, map[string]any{"name": "b", "city": "y"}), // reopens after the delete
		ev(2, 2, "m2", Upsert, map[string]any{"name": "p", "city": "q"}),
		ev(2, 2, "m2b", Upsert, map[string]any{"name": "r", "city": "q"}), // same sequence: m2 leaves an empty interval
	}
	want := []Version{
		{Key: []any{int64(1)}, Start: []any{int64(1)}, End: []any{int64(4)}, Values: map[string]any{"name": "a", "city": "y"}},
		{Key: []any{int64(1)}, Start: []any{int64(4)}, End: []any{int64(5)}, Values: map[string]any{"name": "z", "city": "y"}},
		{Key: []any{int64(1)}, Start: []any{int64(5)}, End: []any{int64(7)}, Values: map[string]any{"name": "b", "city": "y"}},
		{Key: []any{int64(1)}, Start: []any{int64(9)}, Values: map[string]any{"name": "b", "city": "y"}},
		{Key: []any{int64(2)}, Start: []any{int64(2)}, Values: map[string]any{"name": "r", "city": "q"}},
	}
	if d := cmp.Diff(want, SCD2(events, cfg)); d != "" {
		t.Errorf("SCD2 (-want +got):\n%s", d)
	}
}

// The measured Databricks scenario (acceptance data): three updates, each
// known one minute after it happened; and the same result in
// every arrival order.
func TestBitemporal(t *testing.T) {
	cfg := Config{Values: []string{"status"}, Tracked: map[string]bool{"status": true}}
	e := func(bt, st int64, msg, status string) Event {
		x := ev(42, bt, msg, Upsert, map[string]any{"status": status})
		x.Sys = st
		return x
	}
	events := []Event{e(1000, 1001, "a", "PENDING"), e(1002, 1003, "b", "ACTIVE"), e(1004, 1005, "c", "SUSPENDED")}
	render := func(v Version) string { return fmt.Sprint(v.Start, v.End, v.Values) }
	key := []any{int64(42)}
	b := func(status string, start, end, sysStart, sysEnd any) Belief {
		var endSeq []any
		if end != nil {
			endSeq = []any{end}
		}
		return Belief{Version: Version{Key: key, Start: []any{start}, End: endSeq, Values: map[string]any{"status": status}}, SysStart: sysStart, SysEnd: sysEnd}
	}
	want := []Belief{
		b("PENDING", int64(1000), nil, int64(1001), int64(1003)),
		b("PENDING", int64(1000), int64(1002), int64(1003), nil),
		b("ACTIVE", int64(1002), nil, int64(1003), int64(1005)),
		b("ACTIVE", int64(1002), int64(1004), int64(1005), nil),
		b("SUSPENDED", int64(1004), nil, int64(1005), nil),
	}
	sortBeliefs := func(bs []Belief) []Belief {
		sort.Slice(bs, func(i, j int) bool { return fmt.Sprint(bs[i]) < fmt.Sprint(bs[j]) })
		return bs
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		var arrived []Event
		for _, i := range order {
			arrived = append(arrived, events[i])
		}
		if d := cmp.Diff(sortBeliefs(want), sortBeliefs(Bitemporal(arrived, cfg, render))); d != "" {
			t.Errorf("arrival %v (-want +got):\n%s", order, d)
		}
	}
}

// Spark's AUTO CDC tie rules: an upsert and a delete of one key at one
// sequence, the delete wins (whatever the message ids); a bitemporal
// correction (same business time, later system time) replaces the earlier
// belief from its system time on, whatever the message ids.
func TestTieRules(t *testing.T) {
	cfg := Config{Values: []string{"name"}, Tracked: map[string]bool{"name": true}}
	for _, msgs := range [][2]string{{"a", "z"}, {"z", "a"}} {
		events := []Event{
			ev(1, 5, msgs[0], Upsert, map[string]any{"name": "x"}),
			ev(1, 5, msgs[1], Delete, nil),
		}
		if got := SCD1(events, cfg); len(got) != 0 {
			t.Errorf("SCD 1, messages %v: the upsert survived the delete at its sequence: %v", msgs, got)
		}
		if got := SCD2(events, cfg); len(got) != 0 {
			t.Errorf("SCD 2, messages %v: a version survived the delete at its sequence: %v", msgs, got)
		}
	}
	// A correction replaces the belief it corrects (issue 38): 100 from
	// business time 1; 105 believed for business time 2 from system time 2;
	// corrected at system time 3 to 100 (no change at 2 after all), then a
	// delete at business time 3 corrected at system time 5 to an upsert of
	// the same value (no delete after all). From system time 5 on, one
	// version, open, as if the corrected events had never been.
	{
		cfg := Config{Values: []string{"price"}, Tracked: map[string]bool{"price": true}}
		at := func(bt, st int64, msg string, op Op, price int64) Event {
			e := ev(1, bt, msg, op, map[string]any{"price": price})
			e.Sys = st
			return e
		}
		evs := []Event{at(1, 1, "z", Upsert, 100), at(2, 2, "y", Upsert, 105), at(2, 3, "x", Upsert, 100),
			at(3, 4, "w", Delete, 100), at(3, 5, "a", Upsert, 100)}
		var current []string
		for _, b := range Bitemporal(evs, cfg, func(v Version) string { return fmt.Sprint(v.Start, v.End, v.Values) }) {
			if b.SysEnd == nil {
				current = append(current, fmt.Sprint(b.Start, b.End, b.Values["price"]))
			}
		}
		if want := "[1] [] 100"; strings.Join(current, "; ") != want {
			t.Errorf("the current belief after corrections: %v, want %s", current, want)
		}
	}
	// The Acme price correction: 105 believed from Jan 5, corrected to 104
	// on Jan 8, both at business time Jan 1.
	pcfg := Config{Values: []string{"price"}, Tracked: map[string]bool{"price": true}}
	render := func(v Version) string { return fmt.Sprint(v.Start, v.End, v.Values) }
	for _, msgs := range [][2]string{{"a", "z"}, {"z", "a"}} {
		first := ev(7, 1, msgs[0], Upsert, map[string]any{"price": int64(105)})
		first.Sys = int64(5)
		fix := ev(7, 1, msgs[1], Upsert, map[string]any{"price": int64(104)})
		fix.Sys = int64(8)
		got := Bitemporal([]Event{fix, first}, pcfg, render)
		want := []Belief{
			{Version: Version{Key: []any{int64(7)}, Start: []any{int64(1)}, Values: map[string]any{"price": int64(105)}}, SysStart: int64(5), SysEnd: int64(8)},
			{Version: Version{Key: []any{int64(7)}, Start: []any{int64(1)}, Values: map[string]any{"price": int64(104)}}, SysStart: int64(8)},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("correction, messages %v (-want +got):\n%s", msgs, d)
		}
	}
}
