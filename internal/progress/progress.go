// Package progress shows how far long work has come: counts, rate and ETA.
// On a terminal it is one line rewritten in place (at most 10 times a
// second); anywhere else (a pipe, a file, CI logs) it is a plain line every
// few seconds, so logs stay readable and grep-able. It needs nothing beyond
// the standard library: a terminal is a character device.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Line reports the progress of one piece of work. It is safe for
// concurrent use; a nil *Line does nothing.
type Line struct {
	w     io.Writer
	tty   bool
	what  string
	total int64 // 0: unknown
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	start   time.Time
	printed time.Time
	width   int // of the last line on a terminal, to clear it
	done    bool
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// New starts reporting work named what of total units (0: unknown) to w.
func New(w io.Writer, what string, total int64) *Line {
	l := &Line{w: w, tty: IsTerminal(w), what: what, total: total, now: time.Now}
	l.every = 5 * time.Second
	if l.tty {
		l.every = 100 * time.Millisecond
	}
	l.start = l.now()
	return l
}

// SetTotal changes the total (when it becomes known).
func (l *Line) SetTotal(total int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.total = total
	l.mu.Unlock()
}

// Update reports done units and a note (may be empty); it prints only when
// the last print is old enough.
func (l *Line) Update(done int64, note string) {
	l.print(done, note, false)
}

// Finish prints the final state and ends the line.
func (l *Line) Finish(done int64, note string) {
	l.print(done, note, true)
}

func (l *Line) print(done int64, note string, final bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	now := l.now()
	if !final && now.Sub(l.printed) < l.every {
		return
	}
	l.printed = now
	s := Format(l.what, done, l.total, now.Sub(l.start), note)
	switch {
	case l.tty:
		pad := ""
		if n := l.width - len(s); n > 0 {
			pad = strings.Repeat(" ", n) // clear what the longer last line left
		}
		l.width = len(s)
		end := ""
		if final {
			end = "\n"
		}
		fmt.Fprintf(l.w, "\r%s%s%s", s, pad, end)
	default:
		fmt.Fprintln(l.w, s)
	}
	l.done = final
}

// Format renders one progress line: "what: done/total (pct) rate/s ETA d
// note", leaving out what is unknown.
func Format(what string, done, total int64, elapsed time.Duration, note string) string {
	var b strings.Builder
	b.WriteString(what + ": " + count(done))
	if total > 0 {
		fmt.Fprintf(&b, "/%s (%.0f%%)", count(total), 100*float64(done)/float64(total))
	}
	if secs := elapsed.Seconds(); secs >= 0.5 && done > 0 {
		rate := float64(done) / secs
		fmt.Fprintf(&b, " %s/s", count(int64(rate+0.5)))
		if total > done {
			eta := time.Duration(float64(total-done) / rate * float64(time.Second))
			fmt.Fprintf(&b, " ETA %s", eta.Round(time.Second))
		}
	}
	fmt.Fprintf(&b, " after %s", elapsed.Round(time.Second))
	if note != "" {
		b.WriteString(", " + note)
	}
	return b.String()
}

// count renders n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
