// Package appends writes the append ledger (catalog.AppendsTable) for the
// ingest function: before a changelog row stamped t is appended, a ledger
// row of its source reaching t or later has been acknowledged. Compaction
// then tells the sources that may have rows to fold from one query of the
// ledger, instead of reading every changelog's metadata each run.
package appends

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/failure"
)

// Appender appends rows to a table by name (bqwrite.Writer): concurrent
// calls share appends, so the covers of many sources written at once cost
// one request.
type Appender interface {
	Append(ctx context.Context, table string, rows []map[string]any) error
}

// Ledger covers sources. It is safe for concurrent use.
type Ledger struct {
	app    Appender
	window time.Duration
	now    func() time.Time
	log    *slog.Logger

	covers sync.Map // source -> *cover: read on every message, written once per source
	// off: the ledger refused for good (no table, no permission); covers
	// are not written until then (unix µs), and rows are appended anyway.
	off atomic.Int64
}

type cover struct {
	mu    sync.Mutex   // one ledger write per source at a time
	until atomic.Int64 // µs: rows stamped up to this are covered
}

// Options configure a Ledger.
type Options struct {
	// Window is how far ahead one ledger row covers its source (0:
	// catalog.LedgerWindow).
	Window time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// New returns a ledger writing through app.
func New(app Appender, o Options) *Ledger {
	if o.Window <= 0 {
		o.Window = catalog.LedgerWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Ledger{app: app, window: o.Window, now: o.Now, log: o.Log}
}

// retryOff is how long a ledger that refused for good is left alone
// before it is tried again (a table bqcdc apply creates later, a grant
// Terraform adds later).
const retryOff = time.Minute

// Cover returns once source is covered up to at: at once when a row of
// this instance already covers it (the common case: an atomic load),
// otherwise after appending a ledger row covering the next window. A
// passing failure is returned (retryable: the message comes back, and
// nothing is appended uncovered). A refusal for good (no ledger table, no
// permission) is logged and the row is appended anyway: the ledger is a
// hint, and compaction checks every flow with a query at least every
// FullCheckEvery; it trusts no ledger that does not exist.
func (l *Ledger) Cover(ctx context.Context, source string, at time.Time) error {
	if l == nil {
		return nil
	}
	c := l.entry(source)
	us := at.UnixMicro()
	if c.until.Load() >= us {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until.Load() >= us {
		return nil // written meanwhile by another message of the source
	}
	now := l.now()
	if off := l.off.Load(); off != 0 && now.UnixMicro() < off {
		return nil
	}
	until := now
	if at.After(until) {
		until = at
	}
	until = until.Add(l.window)
	err := l.app.Append(ctx, catalog.AppendsTable, []map[string]any{catalog.AppendsRow(source, until, now)})
	if err == nil {
		c.until.Store(until.UnixMicro())
		return nil
	}
	if failure.IsPermanent(err) {
		l.off.Store(now.Add(retryOff).UnixMicro())
		l.log.Warn("the append ledger refused a row for good: changelog rows are appended without it (compaction finds them by its periodic full check)",
			"event", "ledger_refused", "table", catalog.AppendsTable, "error", err.Error())
		return nil
	}
	return failure.Retryable(failure.StageAppend, fmt.Errorf("covering source %s in the append ledger: %w", source, err))
}

func (l *Ledger) entry(source string) *cover {
	if c, ok := l.covers.Load(source); ok {
		return c.(*cover)
	}
	c, _ := l.covers.LoadOrStore(source, &cover{})
	return c.(*cover)
}
