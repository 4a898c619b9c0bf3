package appends

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/failure"
)

type fakeAppender struct {
	mu   sync.Mutex
	rows []map[string]any
	err  error
}

func (f *fakeAppender) Append(_ context.Context, table string, rows []map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if table != catalog.AppendsTable {
		return errors.New("wrong table " + table)
	}
	if f.err != nil {
		return f.err
	}
	f.rows = append(f.rows, rows...)
	return nil
}

func (f *fakeAppender) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.rows)
}

// A source is written once per window, however many rows and goroutines
// cover it; a row stamped past the cover writes the next one, reaching it.
func TestCoverOncePerWindow(t *testing.T) {
	app := &fakeAppender{}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	l := New(app, Options{Window: 5 * time.Minute, Now: func() time.Time { return now }})
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Cover(ctx, "db.t", now); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if app.count() != 1 {
		t.Fatalf("%d ledger rows for one source in one window, want 1", app.count())
	}
	if err := l.Cover(ctx, "db.t", now.Add(4*time.Minute)); err != nil || app.count() != 1 {
		t.Fatalf("a row inside the window wrote a ledger row (%d, %v)", app.count(), err)
	}
	if err := l.Cover(ctx, "db.u", now); err != nil || app.count() != 2 {
		t.Fatalf("another source is covered on its own (%d, %v)", app.count(), err)
	}
	late := now.Add(6 * time.Minute) // stamped later than the clock says: still covered
	if err := l.Cover(ctx, "db.t", late); err != nil || app.count() != 3 {
		t.Fatalf("a row past the cover wrote no new ledger row (%d, %v)", app.count(), err)
	}
	row := app.rows[2]
	if until := row[catalog.ColAppendsUntil].(int64); until < late.UnixMicro() {
		t.Errorf("the new cover reaches %v, before the row's stamp %v", time.UnixMicro(until), late)
	}
}

// A passing failure is the message's (retried, nothing appended
// uncovered); a refusal for good lets rows through uncovered and is tried
// again a minute later.
func TestCoverFailures(t *testing.T) {
	app := &fakeAppender{err: failure.Retryable(failure.StageAppend, errors.New("unavailable"))}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	l := New(app, Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	err := l.Cover(ctx, "db.t", now)
	if err == nil || failure.IsPermanent(err) {
		t.Fatalf("a passing failure: %v, want a retryable error", err)
	}
	app.err = failure.Permanent(failure.StageTable, errors.New("no table"))
	if err := l.Cover(ctx, "db.t", now); err != nil {
		t.Fatalf("a refusal for good stopped the row: %v", err)
	}
	app.err = nil
	if err := l.Cover(ctx, "db.t", now); err != nil || app.count() != 0 {
		t.Fatalf("within the minute after a refusal the ledger was written (%d, %v)", app.count(), err)
	}
	now = now.Add(2 * time.Minute)
	if err := l.Cover(ctx, "db.t", now); err != nil || app.count() != 1 {
		t.Fatalf("after the minute the ledger was not tried again (%d, %v)", app.count(), err)
	}
}

// BenchmarkCovered is what every message pays once its source is covered.
func BenchmarkCovered(b *testing.B) {
	now := time.Now()
	l := New(&fakeAppender{}, Options{Now: func() time.Time { return now }})
	if err := l.Cover(context.Background(), "db.t", now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = l.Cover(context.Background(), "db.t", now)
		}
	})
}
