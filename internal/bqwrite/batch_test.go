package bqwrite

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/failure"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeSender stores the rows of the appends it accepts, as BigQuery does:
// all of a request or none of it.
type fakeSender struct {
	mu      sync.Mutex
	stored  map[string]int // row -> times stored
	batches [][]string
	delay   time.Duration
	// refuse names rows BigQuery refuses; named says whether the refusal
	// lists them (row errors) or only fails the request.
	refuse map[string]bool
	named  bool
	// dropNext fails the next n appends as a dropped connection would.
	dropNext int
	blocked  chan struct{} // when set, appends wait for it to close
}

func newFakeSender() *fakeSender { return &fakeSender{stored: map[string]int{}} }

func (f *fakeSender) send(ctx context.Context, rows [][]byte) ([]bqerror.RowError, error) {
	if f.blocked != nil {
		<-f.blocked
	}
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = string(r)
	}
	f.batches = append(f.batches, names)
	if f.dropNext > 0 {
		f.dropNext--
		return nil, status.Error(codes.Unavailable, "connection reset")
	}
	var refused []bqerror.RowError
	for i, n := range names {
		if f.refuse[n] {
			refused = append(refused, bqerror.RowError{Index: i, Message: "bad value in " + n})
		}
	}
	if len(refused) > 0 {
		err := status.Error(codes.InvalidArgument, "rows refused")
		if !f.named {
			refused = nil
		}
		return refused, err
	}
	for _, n := range names {
		f.stored[n]++
	}
	return nil, nil
}

func (f *fakeSender) storedOnce(t *testing.T, want []string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var got []string
	for n, c := range f.stored {
		if c != 1 {
			t.Errorf("row %s stored %d times", n, c)
		}
		got = append(got, n)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("stored %v, want %v", got, want)
	}
}

func rowName(i int) string { return fmt.Sprintf("r%03d", i) }

// submitAll submits n single-row requests concurrently, as concurrent
// ingest requests do, and returns each one's error.
func submitAll(b *batcher, n int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.submit(context.Background(), [][]byte{[]byte(rowName(i))})
		}()
	}
	wg.Wait()
	return errs
}

func testOptions() BatchOptions {
	o := DefaultBatchOptions()
	o.MaxInFlight = 1
	return o
}

func TestConcurrentRowsShareAppends(t *testing.T) {
	f := newFakeSender()
	f.delay = 5 * time.Millisecond
	b := newBatcher("t", f, testOptions(), nil)
	errs := submitAll(b, 200)
	var want []string
	for i, err := range errs {
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		want = append(want, rowName(i))
	}
	f.storedOnce(t, want)
	if n := b.sent.Appends.Load(); n >= 100 {
		t.Errorf("%d appends for 200 concurrent rows: batching did not happen", n)
	}
	if b.sent.Rows.Load() != 200 {
		t.Errorf("rows sent = %d, want 200", b.sent.Rows.Load())
	}
}

func TestBatchBounds(t *testing.T) {
	f := newFakeSender()
	f.blocked = make(chan struct{})
	o := testOptions()
	o.MaxRows, o.MaxBytes = 7, 40 // 10 rows of 4 bytes at most by size
	b := newBatcher("t", f, o, nil)
	done := make(chan []error)
	go func() { done <- submitAll(b, 60) }()
	waitFor(t, func() bool { return inflight(b) == 1 && queued(b) == 59 }) // the queue fills behind the first append
	close(f.blocked)
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	for _, batch := range f.batches {
		size := 0
		for _, r := range batch {
			size += len(r)
		}
		if len(batch) > o.MaxRows || size > o.MaxBytes {
			t.Errorf("batch of %d rows, %d bytes exceeds the bounds", len(batch), size)
		}
	}
	if len(f.batches) >= 60 {
		t.Errorf("%d appends: rows queued behind a slow append did not batch", len(f.batches))
	}
}

func TestRefusedRowFailsAloneOthersStoredOnce(t *testing.T) {
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprintf("row errors named=%v", named), func(t *testing.T) {
			f := newFakeSender()
			f.delay = 2 * time.Millisecond
			f.refuse, f.named = map[string]bool{rowName(7): true, rowName(31): true}, named
			b := newBatcher("t", f, testOptions(), nil)
			errs := submitAll(b, 50)
			var want []string
			for i, err := range errs {
				bad := i == 7 || i == 31
				switch {
				case bad && (err == nil || !failure.IsPermanent(err) || failure.StageOf(err) != failure.StageAppend):
					t.Errorf("refused row %d: %v, want a permanent append error", i, err)
				case bad && named && !strings.Contains(err.Error(), "bad value in "+rowName(i)):
					t.Errorf("refused row %d: %v, want BigQuery's reason", i, err)
				case !bad && err != nil:
					t.Errorf("row %d: %v", i, err)
				case !bad:
					want = append(want, rowName(i))
				}
			}
			f.storedOnce(t, want)
		})
	}
}

func TestDroppedConnectionFailsOnlyItsBatch(t *testing.T) {
	f := newFakeSender()
	f.blocked = make(chan struct{})
	f.dropNext = 1
	b := newBatcher("t", f, testOptions(), nil)
	// The first row goes out alone and waits; the rest queue behind it.
	first := make(chan error)
	go func() { first <- b.submit(context.Background(), [][]byte{[]byte("lead")}) }()
	waitFor(t, func() bool { return inflight(b) == 1 })
	rest := make(chan []error)
	go func() { rest <- submitAll(b, 20) }()
	waitFor(t, func() bool { return queued(b) == 20 })
	close(f.blocked)
	err := <-first
	if err == nil || failure.IsPermanent(err) {
		t.Fatalf("row of the dropped append: %v, want a retryable error", err)
	}
	var want []string
	for i, err := range <-rest {
		if err != nil {
			t.Errorf("row %d, not in the dropped append: %v", i, err)
		}
		want = append(want, rowName(i))
	}
	// Pub/Sub redelivers the failed message: its row is stored once.
	if err := b.submit(context.Background(), [][]byte{[]byte("lead")}); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	f.storedOnce(t, append(want, "lead"))
}

func TestCancelledCallerWithdrawsQueuedRow(t *testing.T) {
	f := newFakeSender()
	f.blocked = make(chan struct{})
	b := newBatcher("t", f, testOptions(), nil)
	go b.submit(context.Background(), [][]byte{[]byte("lead")}) // occupies the only slot
	waitFor(t, func() bool { return inflight(b) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { errc <- b.submit(ctx, [][]byte{[]byte("gone")}) }()
	waitFor(t, func() bool { return queued(b) == 1 })
	cancel()
	err := <-errc
	if err == nil || failure.IsPermanent(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want a retryable context error", err)
	}
	close(f.blocked)
	if err := b.submit(context.Background(), [][]byte{[]byte("after")}); err != nil {
		t.Fatal(err)
	}
	f.storedOnce(t, []string{"lead", "after"})
}

func TestPropagatingSchemaIsRetryable(t *testing.T) {
	b := newBatcher("t", senderFunc(func(context.Context, [][]byte) ([]bqerror.RowError, error) {
		return nil, fmt.Errorf("%w: %w", errPropagating, status.Error(codes.InvalidArgument, "Input schema has more fields than BigQuery schema"))
	}), testOptions(), nil)
	errs := submitAll(b, 3)
	for i, err := range errs {
		if err == nil || failure.IsPermanent(err) {
			t.Errorf("row %d: %v, want retryable", i, err)
		}
	}
}

func TestLinger(t *testing.T) {
	f := newFakeSender()
	o := testOptions()
	o.MaxInFlight, o.Linger = 4, 300*time.Millisecond
	b := newBatcher("t", f, o, nil)
	errs := submitAll(b, 10)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if len(f.batches) != 1 {
		t.Errorf("%d appends, want the 10 rows lingering into 1", len(f.batches))
	}
}

type senderFunc func(context.Context, [][]byte) ([]bqerror.RowError, error)

func (s senderFunc) send(ctx context.Context, rows [][]byte) ([]bqerror.RowError, error) {
	return s(ctx, rows)
}

func inflight(b *batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inflight
}

func queued(b *batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// waitFor polls cond: the tests order events by state, not by sleeping.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A refusal that names no row of its request splits the batch into one-row
// appends, queued like any row: they stay within MaxInFlight, every row is
// answered, and a one-row append whose answer names another row's index
// (index 7 of a one-row request) is that row's refusal, not a row left
// waiting past its caller's context.
func TestSplitRowsAnsweredWithinInFlight(t *testing.T) {
	for _, tc := range []struct {
		name    string
		indexes []int // the row errors of a refused one-row request; nil: none named
	}{
		{"one-row refusal naming no row", nil},
		{"one-row refusal naming rows outside the request", []int{7, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			cur, peak := 0, 0
			stored := map[string]int{}
			send := senderFunc(func(ctx context.Context, rows [][]byte) ([]bqerror.RowError, error) {
				mu.Lock()
				cur++
				peak = max(peak, cur)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				cur--
				for _, r := range rows {
					if string(r) == "bad" {
						var errs []bqerror.RowError // a batch's refusal names no row
						for _, i := range tc.indexes {
							if len(rows) == 1 {
								errs = append(errs, bqerror.RowError{Index: i, Message: "bad value"})
							}
						}
						return errs, status.Error(codes.InvalidArgument, "rows refused")
					}
				}
				for _, r := range rows {
					stored[string(r)]++
				}
				return nil, nil
			})
			o := testOptions()
			o.MaxInFlight = 2
			b := newBatcher("t", send, o, nil)
			rows := [][]byte{[]byte("bad")}
			for i := range 20 {
				rows = append(rows, []byte(rowName(i)))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- b.submit(ctx, rows) }()
			select {
			case err := <-done:
				if err == nil || !failure.IsPermanent(err) {
					t.Errorf("submit = %v, want the bad row's permanent refusal", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("submit still waiting 10 s after its context ended: a row was never answered")
			}
			waitFor(t, func() bool { return !b.busy() })
			mu.Lock()
			defer mu.Unlock()
			if peak > o.MaxInFlight {
				t.Errorf("%d appends in flight at once, want at most MaxInFlight %d", peak, o.MaxInFlight)
			}
			for i := range 20 {
				if stored[rowName(i)] != 1 {
					t.Errorf("row %s stored %d times, want once", rowName(i), stored[rowName(i)])
				}
			}
		})
	}
}
