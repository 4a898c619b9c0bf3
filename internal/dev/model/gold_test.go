package model

import (
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestGoldWindows(t *testing.T) {
	at := func(hm string) time.Time {
		ts, err := time.Parse("2006-01-02 15:04", "2026-12-01 "+hm)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	rows := []map[string]any{
		{"k": "a", "t": at("10:00"), "x": int64(1)},
		{"k": "a", "t": at("10:20"), "x": int64(2)},
		{"k": "a", "t": at("10:50"), "x": int64(3)}, // 30 min after 10:20: the session's end, so it joins
		{"k": "a", "t": at("11:30"), "x": nil},      // 40 min after: a new session
		{"k": "b", "t": at("10:05"), "x": int64(5)},
		{"k": "b", "t": nil, "x": int64(7)}, // no time: in no window
	}
	count := GoldItem{Name: "n", Group: -1, Func: "COUNT"}
	sum := GoldItem{Name: "s", Group: -1, Func: "SUM", Column: "x"}
	for _, tt := range []struct {
		name string
		w    GoldWindow
		want string
	}{
		{"tumbling", GoldWindow{Column: "t", Size: time.Hour, Slide: time.Hour},
			"k=a w=[2026-12-01T10:00:00Z,2026-12-01T11:00:00Z) n=3 s=6|k=a w=[2026-12-01T11:00:00Z,2026-12-01T12:00:00Z) n=1 s=NULL|k=b w=[2026-12-01T10:00:00Z,2026-12-01T11:00:00Z) n=1 s=5"},
		{"sliding", GoldWindow{Column: "t", Size: time.Hour, Slide: 30 * time.Minute},
			"k=a w=[2026-12-01T09:30:00Z,2026-12-01T10:30:00Z) n=2 s=3|k=a w=[2026-12-01T10:00:00Z,2026-12-01T11:00:00Z) n=3 s=6|" +
				"k=a w=[2026-12-01T10:30:00Z,2026-12-01T11:30:00Z) n=1 s=3|k=a w=[2026-12-01T11:00:00Z,2026-12-01T12:00:00Z) n=1 s=NULL|" +
				"k=a w=[2026-12-01T11:30:00Z,2026-12-01T12:30:00Z) n=1 s=NULL|" +
				"k=b w=[2026-12-01T09:30:00Z,2026-12-01T10:30:00Z) n=1 s=5|k=b w=[2026-12-01T10:00:00Z,2026-12-01T11:00:00Z) n=1 s=5"},
		{"session", GoldWindow{Column: "t", Size: 30 * time.Minute, Session: true},
			"k=a w=[2026-12-01T10:00:00Z,2026-12-01T11:20:00Z) n=3 s=6|k=a w=[2026-12-01T11:30:00Z,2026-12-01T12:00:00Z) n=1 s=NULL|k=b w=[2026-12-01T10:05:00Z,2026-12-01T10:35:00Z) n=1 s=5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.w
			spec := GoldSpec{Groups: []string{"k"}, Window: &w, Items: []GoldItem{{Name: "k", Group: 0}, {Name: "w", Group: -1, Window: true}, count, sum}}
			var got []string
			for _, r := range Gold(spec, rows) {
				got = append(got, GoldRow(spec, r))
			}
			if g := strings.Join(got, "|"); g != tt.want {
				t.Errorf("got\n  %s\nwant\n  %s", strings.ReplaceAll(g, "|", "\n  "), strings.ReplaceAll(tt.want, "|", "\n  "))
			}
		})
	}
}

func TestGoldAverageOfNumeric(t *testing.T) {
	rows := []map[string]any{{"x": big.NewRat(28049, 100)}, {"x": big.NewRat(0, 1)}, {"x": big.NewRat(0, 1)}}
	spec := GoldSpec{Items: []GoldItem{{Name: "a", Group: -1, Func: "AVG", Column: "x"}}}
	got := Gold(spec, rows)
	// 280.49 / 3 = 93.4966666...: NUMERIC keeps 9 decimal places, rounded.
	if len(got) != 1 || got[0]["a"].(*big.Rat).RatString() != "93496666667/1000000000" {
		t.Errorf("AVG = %v", got)
	}
}
