package bqwrite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Batching (group commit). Each ingest request appends one row, and an
// instance serves many requests at once; a Storage Write append costs a
// round trip and a request on the stream's connection whatever it carries.
// So the rows of concurrent requests for the same table version share one
// AppendRows call:
//
//   - a row joins the table's queue; the queue leaves as one append when it
//     holds BatchOptions.MaxRows rows or MaxBytes bytes, or as soon as an
//     append slot is free (at most MaxInFlight appends per table are
//     outstanding) and the oldest row has waited Linger. With Linger 0 a row
//     leaves at once when a slot is free, so a lone request pays nothing;
//     under load, rows that arrive while appends are in flight ride the next
//     one together;
//   - each caller gets the outcome of the append that carried its row, and
//     returns only then: the message is acknowledged only once its row is;
//   - a row BigQuery refuses (row errors come back with their index) fails
//     permanently on its own; BigQuery writes none of a refused request's
//     rows, so the others are appended again, never lost and never doubled.
//     A refusal that names no row of the request (no index, or only indexes
//     outside it) is resolved by appending the batch's rows one by one,
//     through the queue and so within MaxInFlight; a one-row append refused
//     is that row's refusal, whatever index the answer names;
//   - any other failure (connection, server) fails exactly the rows of that
//     append, as retryable: their messages are redelivered. Whether such an
//     append reached BigQuery cannot be known, so a redelivered row may be
//     stored twice, which the views count once (by message id), as for any
//     redelivery;
//   - a caller whose context ends while its row still waits in the queue
//     takes the row out: it is never appended behind its back. A row in
//     flight is always answered (every path of append answers each row or
//     queues it again), so a caller waits at most the append's Timeout past
//     its context.

// BatchOptions bound the batches of one table.
type BatchOptions struct {
	MaxRows     int           // rows per append
	MaxBytes    int           // encoded row bytes per append
	Linger      time.Duration // how long the oldest queued row may wait for company
	MaxInFlight int           // appends outstanding per table version
	// Timeout bounds one append (the batch outlives the requests in it).
	Timeout time.Duration
}

// DefaultBatchOptions: 500 rows and 8 MiB keep a request under the Storage
// Write API's 10 MB limit with room for the descriptor; 4 appends in flight
// per table keep a stream's connection busy without queuing deep inside it.
func DefaultBatchOptions() BatchOptions {
	return BatchOptions{MaxRows: 500, MaxBytes: 8 << 20, MaxInFlight: 4, Timeout: 2 * time.Minute}
}

// sender sends one append and reports BigQuery's verdict: nil, the rows it
// refused (by index in rows), or an error for the call.
type sender interface {
	send(ctx context.Context, rows [][]byte) (refused []bqerror.RowError, err error)
}

// pending is one row waiting for the append that carries it.
type pending struct {
	row     []byte
	done    chan error // buffered: the batcher never blocks on a caller
	queued  bool       // still in the queue (guarded by batcher.mu)
	retries int        // times re-queued after another row's refusal
	// alone: append this row by itself (its batch was refused without
	// naming a row); set before it is queued again, read under batcher.mu.
	alone bool
}

// batcher queues the rows of one table version and sends them in batches.
type batcher struct {
	name string
	out  sender
	opts BatchOptions

	mu       sync.Mutex
	queue    []*pending
	bytes    int
	inflight int
	timer    *time.Timer

	sent    *Counters         // appends and rows sent, shared by the writer's tables
	metrics *metrics.Recorder // each append's time, rows and outcome (nil: none)
}

// Counters count what a writer sent, for measurements.
type Counters struct {
	Appends, Rows atomic.Int64
}

func newBatcher(name string, out sender, opts BatchOptions, sent *Counters) *batcher {
	if sent == nil {
		sent = &Counters{}
	}
	return &batcher{name: name, out: out, opts: opts, sent: sent}
}

// busy reports whether rows are queued or appends in flight.
func (b *batcher) busy() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) > 0 || b.inflight > 0
}

// maxRequeues bounds how often a row is appended again because other rows of
// its batch were refused (each time at least one refused row leaves).
const maxRequeues = 8

// submit appends rows and waits for the outcome of each: it returns nil when
// all are stored, else the first failure (classified, see package failure).
func (b *batcher) submit(ctx context.Context, rows [][]byte) error {
	ps := make([]*pending, len(rows))
	for i, r := range rows {
		ps[i] = &pending{row: r, done: make(chan error, 1)}
	}
	b.mu.Lock()
	for _, p := range ps {
		b.enqueueLocked(p)
	}
	b.flushLocked()
	b.mu.Unlock()
	var first error
	for _, p := range ps {
		select {
		case err := <-p.done:
			if err != nil && first == nil {
				first = err
			}
		case <-ctx.Done():
			if b.withdraw(p) {
				// Never sent: the row is out of the queue, nothing to wait for.
				if first == nil {
					first = failure.Retryable(failure.StageAppend, fmt.Errorf("appending to %s: %w", b.name, ctx.Err()))
				}
				continue
			}
			// Sent already: its outcome decides (the append has its own timeout).
			if err := <-p.done; err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (b *batcher) enqueueLocked(p *pending) {
	p.queued = true
	b.queue = append(b.queue, p)
	b.bytes += len(p.row)
}

// withdraw takes a row out of the queue if it is still there.
func (b *batcher) withdraw(p *pending) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !p.queued {
		return false
	}
	for i, q := range b.queue {
		if q == p {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			b.bytes -= len(p.row)
			p.queued = false
			return true
		}
	}
	return false
}

// flushLocked sends what the rules allow now, and arms the linger timer for
// the rest.
func (b *batcher) flushLocked() {
	for len(b.queue) > 0 && b.inflight < b.opts.MaxInFlight {
		full := len(b.queue) >= b.opts.MaxRows || b.bytes >= b.opts.MaxBytes
		if !full && b.opts.Linger > 0 {
			if b.timer == nil {
				b.timer = time.AfterFunc(b.opts.Linger, b.lingered)
			}
			return
		}
		b.sendLocked(b.takeLocked())
	}
}

func (b *batcher) lingered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	for len(b.queue) > 0 && b.inflight < b.opts.MaxInFlight {
		b.sendLocked(b.takeLocked())
	}
}

// takeLocked removes the next batch from the queue.
func (b *batcher) takeLocked() []*pending {
	n, size := 0, 0
	for n < len(b.queue) && n < b.opts.MaxRows {
		if n > 0 && (b.queue[n].alone || size+len(b.queue[n].row) > b.opts.MaxBytes) {
			break
		}
		size += len(b.queue[n].row)
		n++
		if b.queue[n-1].alone {
			break
		}
	}
	batch := make([]*pending, n)
	copy(batch, b.queue[:n])
	b.queue = append(b.queue[:0], b.queue[n:]...)
	b.bytes -= size
	for _, p := range batch {
		p.queued = false
	}
	if b.timer != nil && len(b.queue) == 0 {
		b.timer.Stop()
		b.timer = nil
	}
	return batch
}

func (b *batcher) sendLocked(batch []*pending) {
	b.inflight++
	go b.run(batch)
}

// run sends one batch and settles its rows.
func (b *batcher) run(batch []*pending) {
	requeue := b.append(batch)
	b.mu.Lock()
	b.inflight--
	for _, p := range requeue {
		b.enqueueLocked(p)
	}
	b.flushLocked()
	b.mu.Unlock()
}

// append sends batch and answers every row; it returns the rows to append
// again (not written because others of the batch were refused).
func (b *batcher) append(batch []*pending) (requeue []*pending) {
	rows := make([][]byte, len(batch))
	for i, p := range batch {
		rows[i] = p.row
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.Timeout)
	defer cancel()
	b.sent.Appends.Add(1)
	b.sent.Rows.Add(int64(len(rows)))
	start := time.Now()
	refused, err := b.out.send(ctx, rows)
	b.measure(ctx, len(rows), time.Since(start), refused, err)
	switch {
	case err == nil:
		for _, p := range batch {
			p.done <- nil
		}
		return nil
	case errors.Is(err, errPropagating):
		for _, p := range batch {
			p.done <- failure.Retryable(failure.StageAppend, fmt.Errorf("appending to %s: %w", b.name, err))
		}
		return nil
	case len(refused) > 0 || bqerror.RowsRefused(err):
		bad := map[int]string{}
		for _, r := range refused {
			if r.Index >= 0 && r.Index < len(batch) { // an index outside the request names none of its rows
				bad[r.Index] = r.Message
			}
		}
		switch {
		case len(bad) == 0 && len(batch) == 1:
			// The request held this row only: the refusal is its own.
			batch[0].done <- b.refusedAlone(refused, err)
			return nil
		case len(bad) == 0:
			// BigQuery refused the request without naming one of its rows:
			// find the row by appending each alone, queued like any row.
			for _, p := range batch {
				p.alone = true
			}
			return batch
		}
		for i, p := range batch {
			if msg, ok := bad[i]; ok {
				// BigQuery's message may quote the row's values.
				p.done <- failure.Permanent(failure.StageAppend, failure.Errorf("BigQuery refused the row appended to %s: %s", b.name, failure.Value(msg)))
				continue
			}
			if p.retries++; p.retries > maxRequeues {
				p.done <- failure.Retryable(failure.StageAppend, fmt.Errorf("appending to %s: rows refused beside this one %d times: %w", b.name, maxRequeues, err))
				continue
			}
			requeue = append(requeue, p)
		}
		return requeue
	default:
		cerr := b.classify(err)
		for _, p := range batch {
			p.done <- cerr
		}
		return nil
	}
}

// measure records one append call. A call whose rows BigQuery refused is
// "refused" (those rows fail for good), any other failure "error" (the rows
// come back through redelivery).
func (b *batcher) measure(ctx context.Context, rows int, d time.Duration, refused []bqerror.RowError, err error) {
	outcome := metrics.AppendOK
	switch {
	case len(refused) > 0 || (err != nil && bqerror.RowsRefused(err)):
		outcome = metrics.AppendRefused
	case err != nil:
		outcome = metrics.AppendError
	}
	b.metrics.AppendCall(ctx, rows, d, outcome)
}

// refusedAlone is the answer to a one-row append BigQuery refused: with
// BigQuery's message when it gave one (whatever index it named), else the
// request's refusal.
func (b *batcher) refusedAlone(refused []bqerror.RowError, err error) error {
	if len(refused) > 0 {
		return failure.Permanent(failure.StageAppend, failure.Errorf("BigQuery refused the row appended to %s: %s", b.name, failure.Value(refused[0].Message)))
	}
	if err == nil {
		err = status.Error(codes.InvalidArgument, "row refused")
	}
	return b.classify(err)
}

// classify turns an append error into the pipeline's classes: a refusal of
// the rows is permanent, anything else (connection, server, timeout) is
// retryable.
func (b *batcher) classify(err error) error {
	if bqerror.RowsRefused(err) {
		// BigQuery's message may quote the row's values.
		err = failure.WithValue(err, "BigQuery refused the row (INVALID_ARGUMENT; its message is withheld: it may quote values)")
		return failure.Permanent(failure.StageAppend, fmt.Errorf("appending to %s: %w", b.name, err))
	}
	return failure.Retryable(failure.StageAppend, fmt.Errorf("appending to %s: %w", b.name, err))
}

// errPropagating marks a refusal that the stream would not make minutes
// later: the table's new columns have not reached the stream yet.
var errPropagating = errors.New("the table's new schema is still reaching the Storage Write API")
