package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		done, total int64
		elapsed     time.Duration
		note, want  string
	}{
		{0, 0, 0, "", "replay: 0 after 0s"},
		{1500, 6000, 3 * time.Second, "", "replay: 1,500/6,000 (25%) 500/s ETA 9s after 3s"},
		{6000, 6000, 12 * time.Second, "2 failed", "replay: 6,000/6,000 (100%) 500/s after 12s, 2 failed"},
		{1234567, 0, 10 * time.Second, "", "replay: 1,234,567 123,457/s after 10s"},
	} {
		if got := Format("replay", tt.done, tt.total, tt.elapsed, tt.note); got != tt.want {
			t.Errorf("Format(%d, %d, %v) = %q, want %q", tt.done, tt.total, tt.elapsed, got, tt.want)
		}
	}
}

// Not a terminal: plain lines, at most one per interval, and the final one.
func TestPlainLines(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	l := New(&buf, "load", 100)
	l.now = func() time.Time { return clock }
	l.start = clock
	for i := int64(1); i <= 100; i++ {
		clock = clock.Add(100 * time.Millisecond)
		l.Update(i, "")
	}
	l.Finish(100, "done")
	l.Update(100, "after the end") // ignored
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// 10 s in 5 s intervals: two updates, then the final line.
	if len(lines) != 3 || strings.Contains(buf.String(), "\r") || !strings.HasSuffix(lines[2], "after 10s, done") {
		t.Errorf("lines = %q", lines)
	}
	var nilLine *Line
	nilLine.Update(1, "") // a nil line is silent
	if IsTerminal(&buf) {
		t.Error("a buffer is not a terminal")
	}
}

// On a terminal the line is rewritten in place, padded over a longer one.
func TestTerminalLine(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	l := &Line{w: &buf, tty: true, what: "x", every: 100 * time.Millisecond, now: func() time.Time { return clock }, start: clock}
	clock = clock.Add(time.Second)
	l.Update(10, "a long note here")
	clock = clock.Add(time.Second)
	l.Finish(20, "")
	want := "\rx: 10 10/s after 1s, a long note here" + "\rx: 20 10/s after 2s" + strings.Repeat(" ", 18) + "\n"
	if buf.String() != want {
		t.Errorf("terminal output %q, want %q", buf.String(), want)
	}
}
