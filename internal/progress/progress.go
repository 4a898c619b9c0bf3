// Package progress reports how far a long command is: objects done of a
// total, the rate so far and the time left at that rate. On a terminal it
// redraws one line in place; otherwise (a CI log, a file) it writes a plain
// line every Every objects or Interval, whichever comes first, so a log
// shows progress without one line per object.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Defaults for a Meter writing plain lines.
const (
	DefaultEvery    = 100
	DefaultInterval = 10 * time.Second
	// redraw bounds how often a terminal line is redrawn: faster is
	// flicker that nobody reads.
	redraw = 100 * time.Millisecond
)

// IsTerminal reports whether w is a terminal (a character device), without
// a dependency on a terminal library: a pipe, a file or any other writer is
// not.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Meter counts objects done of a total. It is safe for concurrent use.
type Meter struct {
	W        io.Writer
	Label    string // what is counted, e.g. "apply"; leads every line
	Unit     string // e.g. "objects"
	Total    int
	Terminal bool          // redraw one line in place
	Every    int           // plain lines: at most every Every objects (0: DefaultEvery)
	Interval time.Duration // plain lines: or at least every Interval (0: DefaultInterval)
	Now      func() time.Time

	mu        sync.Mutex
	start     time.Time
	done      int
	note      string // shown after the count (Set)
	shownDone int
	shownAt   time.Time
	finished  bool
}

// New returns a meter writing to w, started now.
func New(w io.Writer, label, unit string, total int, terminal bool) *Meter {
	m := &Meter{W: w, Label: label, Unit: unit, Total: total, Terminal: terminal}
	m.Start()
	return m
}

func (m *Meter) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Start (re)starts the clock the rate is measured from.
func (m *Meter) Start() {
	m.mu.Lock()
	m.start = m.now()
	m.shownAt = m.start
	m.mu.Unlock()
}

// SetTotal sets the number of objects to do (known once the work is
// planned) and restarts the clock.
func (m *Meter) SetTotal(n int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.Total = n
	m.mu.Unlock()
	m.Start()
}

// Add counts n more objects done, and shows the count when it is time to.
func (m *Meter) Add(n int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done += n
	now := m.now()
	if m.due(now) {
		m.show(now)
	}
}

// Set sets the count done (for work counted as a running total, such as
// messages landed) and a note shown after it, and shows them when it is
// time to.
func (m *Meter) Set(done int, note string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done, m.note = done, note
	now := m.now()
	if m.due(now) {
		m.show(now)
	}
}

func (m *Meter) due(now time.Time) bool {
	if m.finished || m.done == m.shownDone {
		return false
	}
	if m.Terminal {
		return now.Sub(m.shownAt) >= redraw || m.done >= m.Total
	}
	every, interval := m.Every, m.Interval
	if every <= 0 {
		every = DefaultEvery
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	return m.done-m.shownDone >= every || now.Sub(m.shownAt) >= interval
}

// Finish shows the final count (on a terminal, ending the line), unless
// nothing was planned. Counting after Finish shows nothing.
func (m *Meter) Finish() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return
	}
	m.finished = true
	if m.Total == 0 && m.done == 0 {
		return // nothing was planned (the command failed first): no line
	}
	now := m.now()
	if m.done != m.shownDone || !m.Terminal {
		m.show(now)
	}
	if m.Terminal {
		fmt.Fprintln(m.W)
	}
}

// show writes the line for now. m.mu is held.
func (m *Meter) show(now time.Time) {
	m.shownDone, m.shownAt = m.done, now
	line := m.line(now)
	if m.Terminal {
		// Carriage return and erase-line: the line is redrawn in place.
		fmt.Fprint(m.W, "\r\x1b[K"+line)
		return
	}
	fmt.Fprintln(m.W, line)
}

// line renders e.g. "apply: 412/2503 objects (16 %), 37.2/s, ETA 56s".
func (m *Meter) line(now time.Time) string {
	s := fmt.Sprintf("%s: %d/%d %s", m.Label, m.done, m.Total, m.Unit)
	if m.Total > 0 {
		s += fmt.Sprintf(" (%d %%)", m.done*100/m.Total)
	}
	elapsed := now.Sub(m.start)
	if elapsed <= 0 || m.done == 0 {
		return s
	}
	rate := float64(m.done) / elapsed.Seconds()
	s += fmt.Sprintf(", %.1f/s", rate)
	if left := m.Total - m.done; left > 0 {
		eta := time.Duration(float64(left) / rate * float64(time.Second))
		s += ", ETA " + eta.Round(time.Second).String()
	} else {
		s += ", took " + elapsed.Round(10*time.Millisecond).String()
	}
	if m.note != "" {
		s += "; " + m.note
	}
	return s
}
