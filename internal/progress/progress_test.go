package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestPlainLinesEveryNObjects(t *testing.T) {
	var out strings.Builder
	clock := &fakeClock{t: time.Unix(0, 0), step: 10 * time.Millisecond}
	m := &Meter{W: &out, Label: "apply", Unit: "objects", Total: 250, Every: 100, Now: clock.now}
	m.Start()
	for range 250 {
		m.Add(1)
	}
	m.Finish()
	m.Add(1) // after Finish: nothing more
	want := []string{
		"apply: 100/250 objects (40 %), 100.0/s, ETA 2s",
		"apply: 200/250 objects (80 %), 100.0/s, ETA 1s",
		"apply: 250/250 objects (100 %), 99.6/s, took 2.51s",
	}
	if d := cmp.Diff(want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
}

func TestPlainLinesEveryInterval(t *testing.T) {
	var out strings.Builder
	clock := &fakeClock{t: time.Unix(0, 0), step: 4 * time.Second}
	m := &Meter{W: &out, Label: "apply", Unit: "objects", Total: 10, Interval: 10 * time.Second, Now: clock.now}
	m.Start()
	for range 6 {
		m.Add(1)
	}
	// Started at 4 s; objects at 8, 12, 16 (shown), 20, 24, 28 s (shown).
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Errorf("%d lines after 28 s, want 2 (one per 10 s):\n%s", got, out.String())
	}
}

func TestTerminalRedrawsOneLine(t *testing.T) {
	var out strings.Builder
	clock := &fakeClock{t: time.Unix(0, 0), step: 50 * time.Millisecond}
	m := &Meter{W: &out, Label: "apply", Unit: "objects", Total: 4, Terminal: true, Now: clock.now}
	m.Start()
	for range 4 {
		m.Add(1)
	}
	m.Finish()
	s := out.String()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("want one line ended once, got %q", s)
	}
	draws := strings.Split(s, "\r\x1b[K")[1:]
	if len(draws) == 0 || !strings.HasPrefix(draws[len(draws)-1], "apply: 4/4 objects (100 %)") {
		t.Errorf("draws = %q", draws)
	}
	// Redrawn at most every 100 ms: readings are 50 ms apart.
	if len(draws) > 3 {
		t.Errorf("%d redraws of 4 objects 50 ms apart, want at most 3: %q", len(draws), draws)
	}
}

func TestNilOrUnplannedMeterIsSilent(t *testing.T) {
	var m *Meter
	m.Add(1)
	m.Finish()
	var out strings.Builder
	New(&out, "apply", "objects", 0, false).Finish()
	if out.Len() > 0 {
		t.Errorf("a meter with nothing planned wrote %q", out.String())
	}
}
