package bqwrite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"golang.org/x/sync/singleflight"
	"google.golang.org/protobuf/proto"
)

// ErrNoTable means the destination table does not exist.
var ErrNoTable = errors.New("table not found")

// Writer appends to the tables of one dataset. It is safe for concurrent use:
// callers share one managed stream per table, and only the first use of a
// table (or a schema refresh) waits on that table's setup, never a global lock.
type Writer struct {
	bq      *bigquery.Client
	mw      *managedwriter.Client
	project string
	dataset string

	// RefreshEvery is how long a table's metadata is trusted before it is
	// read again (each table after between 1 and 1.5 times this, at
	// random, so the tables of an instance, and the instances of a fleet,
	// do not come due together), so labels bqcdc apply changed are picked
	// up without a restart. Columns do not wait for it: a message with a
	// field the table lacks reads the table again at once (evolution),
	// except on a topic with schema evolution off, whose instances start
	// filling a column apply added at their next refresh.
	// Each refresh is a tables.get: at 10,000 busy tables an instance
	// refreshing every 5 minutes would make 33 a second, a third of
	// BigQuery's per-method quota, which the fleet shares; every 30
	// minutes it is under 6.
	RefreshEvery time.Duration
	// CloseGrace is how long a replaced stream stays open for appends already
	// in flight on it.
	CloseGrace time.Duration
	// Batch bounds the appends that carry the rows of concurrent callers
	// (see batch.go). Set it before the first append.
	Batch BatchOptions
	// Sent counts appends and rows sent.
	Sent Counters
	// Metrics records each append call's time, rows and outcome (nil:
	// none). Set it before the first append.
	Metrics *metrics.Recorder
	// IdleClose closes the stream of a table nothing was appended to for
	// this long (0: never); the next append opens it again. An instance
	// that has seen a thousand tables holds streams only for the ones that
	// are busy.
	IdleClose time.Duration

	mu        sync.RWMutex
	tables    map[string]*Table
	setup     singleflight.Group
	lastSweep atomic.Int64 // unix ns
}

// Table is a destination table: its metadata, an encoder for its schema and
// the managed stream rows are appended to.
type Table struct {
	Name     string
	Metadata *bigquery.TableMetadata
	Encoder  *Encoder
	stream   *managedwriter.ManagedStream
	batch    *batcher
	loaded   time.Time
	trust    time.Duration // read again this long after loaded (RefreshEvery, jittered)
	used     *atomic.Int64 // unix ns of the last append; shared by refreshed copies
}

// NewWriter returns a writer for project.dataset.
func NewWriter(bq *bigquery.Client, mw *managedwriter.Client, project, dataset string) *Writer {
	return &Writer{bq: bq, mw: mw, project: project, dataset: dataset,
		RefreshEvery: 30 * time.Minute, CloseGrace: 2 * time.Minute, Batch: DefaultBatchOptions(), IdleClose: 10 * time.Minute,
		tables: map[string]*Table{}}
}

// Table returns the destination table, opening its stream on first use.
func (w *Writer) Table(ctx context.Context, name string) (*Table, error) {
	w.sweep()
	w.mu.RLock()
	t := w.tables[name]
	w.mu.RUnlock()
	if t != nil && time.Since(t.loaded) < t.trust {
		return t, nil
	}
	v, err, _ := w.setup.Do(name, func() (any, error) { return w.open(ctx, name, t) })
	if err != nil {
		if t != nil && !errors.Is(err, ErrNoTable) {
			return t, nil // keep serving with the old schema if a refresh fails transiently
		}
		return nil, err
	}
	return v.(*Table), nil
}

// open reads the table's metadata and, unless the schema is unchanged since
// old, opens a new default stream for it.
func (w *Writer) open(ctx context.Context, name string, old *Table) (*Table, error) {
	md, err := w.bq.Dataset(w.dataset).Table(name).Metadata(ctx)
	if err != nil {
		if bqerror.NotFound(err) {
			return nil, fmt.Errorf("%w: %s.%s.%s", ErrNoTable, w.project, w.dataset, name)
		}
		return nil, fmt.Errorf("reading metadata of table %s: %w", name, err)
	}
	enc, err := SharedEncoder(md.Schema)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	if old != nil && proto.Equal(old.Encoder.Descriptor(), enc.Descriptor()) {
		t := *old
		t.Metadata, t.loaded, t.trust = md, time.Now(), w.trustFor()
		w.swap(name, &t, nil)
		return &t, nil
	}
	// The stream outlives this request: it is shared by later invocations.
	ms, err := w.mw.NewManagedStream(context.WithoutCancel(ctx),
		managedwriter.WithDestinationTable(managedwriter.TableParentFromParts(w.project, w.dataset, name)),
		managedwriter.WithType(managedwriter.DefaultStream),
		managedwriter.WithSchemaDescriptor(enc.Descriptor()))
	if err != nil {
		return nil, fmt.Errorf("opening write stream for table %s: %w", name, err)
	}
	t := &Table{Name: name, Metadata: md, Encoder: enc, stream: ms, loaded: time.Now(), trust: w.trustFor(), used: new(atomic.Int64)}
	t.used.Store(time.Now().UnixNano())
	t.batch = newBatcher(name, streamSender{w: w, t: t}, w.Batch, &w.Sent)
	t.batch.metrics = w.Metrics
	var retired *managedwriter.ManagedStream
	if old != nil {
		retired = old.stream
	}
	w.swap(name, t, retired)
	return t, nil
}

// trustFor is how long a table's metadata just read is trusted:
// RefreshEvery, plus up to half of it at random.
func (w *Writer) trustFor() time.Duration {
	if w.RefreshEvery <= 0 {
		return 0
	}
	return w.RefreshEvery + rand.N(w.RefreshEvery/2+1)
}

func (w *Writer) swap(name string, t *Table, retired *managedwriter.ManagedStream) {
	w.mu.Lock()
	w.tables[name] = t
	w.mu.Unlock()
	if retired != nil {
		time.AfterFunc(w.CloseGrace, func() { retired.Close() })
	}
}

// forget drops a table's stream after a connection-level failure, so the next
// append reconnects.
func (w *Writer) forget(t *Table) {
	w.mu.Lock()
	if w.tables[t.Name] == t {
		delete(w.tables, t.Name)
		time.AfterFunc(w.CloseGrace, func() { t.stream.Close() })
	}
	w.mu.Unlock()
}

// Append encodes rows for table and appends them in one request, returning
// only once BigQuery has acknowledged them (or refused them). Errors are
// classified (see package failure): a row that does not fit is permanent.
func (w *Writer) Append(ctx context.Context, table string, rows []map[string]any) error {
	t, err := w.Table(ctx, table)
	if err != nil {
		if errors.Is(err, ErrNoTable) {
			return failure.Permanent(failure.StageTable, err)
		}
		return failure.Retryable(failure.StageTable, err)
	}
	return w.AppendTo(ctx, t, rows)
}

// AppendTo is Append to a table the caller already looked up, so the rows
// are encoded for the very table version the caller prepared them for. The
// rows share appends with those of concurrent callers (see batch.go); it
// returns once BigQuery has acknowledged (or refused) the append carrying
// them.
func (w *Writer) AppendTo(ctx context.Context, t *Table, rows []map[string]any) error {
	data := make([][]byte, len(rows))
	for i, r := range rows {
		var err error
		if data[i], err = t.Encoder.Encode(r); err != nil {
			return failure.Permanent(failure.StageEncode, fmt.Errorf("table %s: %w", t.Name, err))
		}
	}
	return w.AppendEncoded(ctx, t, data)
}

// AppendEncoded is AppendTo for rows already encoded for t (package
// transcode writes them straight from the message).
func (w *Writer) AppendEncoded(ctx context.Context, t *Table, rows [][]byte) error {
	if t.used != nil {
		t.used.Store(time.Now().UnixNano())
	}
	return t.batch.submit(ctx, rows)
}

// sweep closes the streams of tables idle for IdleClose, at most every
// quarter of it. A table with rows queued or appends in flight is never
// idle.
func (w *Writer) sweep() {
	if w.IdleClose <= 0 {
		return
	}
	now := time.Now()
	last := w.lastSweep.Load()
	if now.UnixNano()-last < int64(w.IdleClose/4) || !w.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, t := range w.tables {
		if now.UnixNano()-t.used.Load() < int64(w.IdleClose) || t.batch.busy() {
			continue
		}
		delete(w.tables, name)
		time.AfterFunc(w.CloseGrace, func() { t.stream.Close() })
	}
}

// OpenTables is how many tables have an open stream.
func (w *Writer) OpenTables() int {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return len(w.tables)
}

// streamSender sends a table's batches on its managed stream.
type streamSender struct {
	w *Writer
	t *Table
}

func (s streamSender) send(ctx context.Context, rows [][]byte) ([]bqerror.RowError, error) {
	res, err := s.t.stream.AppendRows(ctx, rows)
	var resp *storagepb.AppendRowsResponse
	if err == nil {
		resp, err = res.FullResponse(ctx)
	}
	switch {
	case err == nil:
		return nil, nil
	case s.t.propagating(err):
		return nil, fmt.Errorf("%w: %w", errPropagating, err)
	case bqerror.RowsRefused(err):
		return bqerror.RowErrors(resp), err
	}
	if ctx.Err() == nil {
		s.w.forget(s.t) // a connection-level failure: the next append reconnects
	}
	return nil, err
}

// Close closes every open stream.
func (w *Writer) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, t := range w.tables {
		t.stream.Close()
		delete(w.tables, name)
	}
}
