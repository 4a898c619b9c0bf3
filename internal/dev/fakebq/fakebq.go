// Package fakebq is an in-process fake of the two BigQuery endpoints the
// ingest function talks to, for benchmarks and fault-injection tests:
//
//   - REST (an httptest server): tables.get, which bqwrite reads a table's
//     schema, labels, etag and lastModifiedTime from, and tables.patch,
//     which schema evolution sends (with If-Match). Paths are accepted with
//     and without the /bigquery/v2 prefix; unknown tables answer 404 in
//     BigQuery's error JSON, so bqerror.NotFound recognises it. For
//     `bqcdc apply`: datasets.get/insert and tables.insert (admin.go), and
//     DDL query jobs, done at once and remembered, no other SQL: one
//     CREATE statement or a script of them (jobs.go).
//   - Storage Write (a gRPC server on 127.0.0.1): GetWriteStream and
//     AppendRows on tables' default streams (…/streams/_default), the only
//     streams bqcdc uses.
//
// The BigQuery emulator serves the same endpoints, but every append there is
// a SQLite INSERT, a binary linking it takes minutes to build, and it cannot
// be told to fail. This fake decodes no row unless asked: an append is
// counted and acknowledged, so a benchmark measures the client side.
//
// How it answers REST requests: at once, unless told otherwise, since what
// the REST side costs a client is mostly what it costs in BigQuery, not
// here. Two options bring that cost back, so that a benchmark of apply or
// compaction measures what a real project allows rather than what a
// loopback socket does:
//   - Options.RTT (SetRTT) delays every response by a simulated round
//     trip; requests are served concurrently, so concurrency pays off as
//     it would against BigQuery's tens of milliseconds per metadata call.
//   - Options.Quota enforces BigQuery's REST quotas (internal/bqquota: per
//     user and method a second, per table updates per 10 s), refusing what
//     BigQuery would with 403 rateLimitExceeded, which the client library
//     retries after a backoff of a second or more: a client that does not
//     pace itself (bqquota.Transport) is slowed as in production. Requests
//     are counted by method either way (Requests, Rejected), and
//     QuotaSeconds and QuotaFloor turn the counts into the quota a phase
//     used, which bounds its wall time in a real project whatever this
//     fake measured. See quota.go for the algorithms.
//
// How it answers appends (what it models, and what it does not):
//   - Responses come back in request order on each connection, as
//     BigQuery's do, but requests are pipelined: an added latency (Options,
//     SetLatency, Fault.Latency) delays each response by that much after its
//     request arrived, without delaying the requests behind it. It models a
//     round trip, not a throughput cap, so that a benchmark with 5 ms of
//     latency is not limited to 200 appends a second per table.
//   - Rows are written (counted in Stats.Stored, kept by Rows) when their
//     append is acknowledged, never otherwise. A dropped RPC therefore writes
//     none of the requests still waiting for their response, which makes
//     fault tests deterministic; real BigQuery may have written them (the
//     client cannot know), which is why bqcdc's views count a message id once.
//   - A refused append (Fault.RefuseRows) writes none of its rows and
//     answers with the shape the Storage Write API documents: an
//     AppendRowsResponse whose error is INVALID_ARGUMENT (code 3) and whose
//     row_errors name the bad rows by index (see Fault).
//   - It checks no row against the table schema, no offset against the end
//     of the stream (an offset in the request is echoed in the result), and
//     supports neither created (COMMITTED, PENDING, BUFFERED) streams nor
//     Arrow rows. Requests over the API's 10 MB limit are refused.
package fakebq

import (
	"fmt"
	"net"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"github.com/bqcdc/bqcdc/internal/bqquota"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	bq "google.golang.org/api/bigquery/v2"
	"google.golang.org/grpc"
)

// DefaultProject is the project of a Server whose Options name none.
const DefaultProject = "fake-project"

// MaxRequestBytes is the Storage Write API's limit on one AppendRows
// request; the fake refuses larger ones with INVALID_ARGUMENT.
const MaxRequestBytes = 10 << 20

// Options configure a Server.
type Options struct {
	// Project is the project tables are registered in; "" means
	// DefaultProject.
	Project string
	// Location is reported on write streams (managedwriter keys its
	// connection pools by it); "" is what BigQuery reports for the default
	// stream's BASIC view too.
	Location string
	// Latency delays every append's response (see the package doc).
	Latency time.Duration
	// KeepRows keeps every acknowledged row's bytes (see Rows). Off by
	// default: a benchmark must not accumulate memory.
	KeepRows bool
	// Quota, when set, is enforced on every REST request as BigQuery
	// enforces it (see quota.go); its zero fields are bqquota.Default's.
	// Nil enforces nothing; requests are counted either way (Requests).
	Quota *bqquota.Limits
	// RTT delays every REST response (see SetRTT): a simulated round trip,
	// waited out before the request is handled. Requests are served
	// concurrently, so it adds latency, not a cap on throughput.
	RTT time.Duration
}

// Table is what a table registered on the fake reports.
type Table struct {
	// Schema is the table's schema; when nil, Columns gives it.
	Schema  bigquery.Schema
	Columns schema.Columns
	Labels  map[string]string

	Description      string
	TimePartitioning *bigquery.TimePartitioning
	Clustering       *bigquery.Clustering

	// ViewQuery makes the table a view (tables.get reports type VIEW and
	// the query). The fake derives no schema from it, as BigQuery would.
	ViewQuery string
}

// Stats count the appends to a table (or to all tables, TotalStats).
type Stats struct {
	Appends int64 // AppendRows requests received
	Rows    int64 // rows they carried
	Bytes   int64 // serialized row bytes they carried
	Failed  int64 // requests answered with an error or dropped
	Stored  int64 // rows acknowledged, i.e. written
}

// Row is one acknowledged row, kept when Options.KeepRows is set.
type Row struct {
	Data   []byte
	schema *writerSchema
}

// Server is the fake. It is safe for concurrent use.
type Server struct {
	opts     Options
	rest     *httptest.Server
	grpc     *grpc.Server
	lis      *trackingListener
	keepRows bool

	latency     atomic.Int64 // time.Duration
	rtt         atomic.Int64 // time.Duration, of REST requests
	quota       quota        // REST requests counted and limited (quota.go)
	connections atomic.Int64
	total       counters

	mu       sync.RWMutex
	tables   map[string]*table                      // by path: projects/P/datasets/D/tables/T
	datasets map[string]bool                        // created through datasets.insert, by "project/dataset" (admin.go)
	jobs     map[string]*bq.Job                     // DDL jobs by "project/jobID" (jobs.go)
	results  map[string]*bq.GetQueryResultsResponse // answered queries' results by "project/jobID" (queries.go)
	answer   QueryFunc                              // answers queries (queries.go); nil: none
	ddl      []string                               // the DDL statements run, in order (jobs.go)
	routines map[string]bool                        // table functions made by DDL, by tablePath (ddl.go)
	jobSeq   atomic.Int64

	faultMu   sync.Mutex
	fault     FaultFunc
	next      []Fault
	restFails []int // HTTP status codes for the next tables requests
}

// New starts a fake on random local ports. Close stops it.
func New(o Options) (*Server, error) {
	if o.Project == "" {
		o.Project = DefaultProject
	}
	s := &Server{opts: o, keepRows: o.KeepRows, tables: map[string]*table{}}
	s.latency.Store(int64(o.Latency))
	s.rtt.Store(int64(o.RTT))
	s.quota.init(o.Quota)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakebq: listening for gRPC: %w", err)
	}
	s.lis = &trackingListener{Listener: l, conns: map[net.Conn]struct{}{}}
	// The request size is checked by the handler, so that an oversized
	// append is refused the way BigQuery refuses it instead of by gRPC.
	s.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(4 * MaxRequestBytes))
	storagepb.RegisterBigQueryWriteServer(s.grpc, &writeService{s: s})
	go func() { _ = s.grpc.Serve(s.lis) }()
	s.rest = httptest.NewServer(restHandler{s})
	return s, nil
}

// Start is New for a test or benchmark: it fails tb on error and closes the
// fake when tb ends.
func Start(tb testing.TB, o Options) *Server {
	tb.Helper()
	s, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops both servers. Open AppendRows streams are cut (Stop, not
// GracefulStop, which would wait for clients to close them).
func (s *Server) Close() {
	s.grpc.Stop()
	s.rest.Close()
}

// Project is the project tables are registered in.
func (s *Server) Project() string { return s.opts.Project }

// RESTURL is the REST endpoint's base URL (clients.Config.Endpoint).
func (s *Server) RESTURL() string { return s.rest.URL }

// GRPCAddr is the Storage Write endpoint's host:port
// (clients.Config.StorageEndpoint).
func (s *Server) GRPCAddr() string { return s.lis.Addr().String() }

// ClientConfig points bqcdc's clients at the fake.
func (s *Server) ClientConfig() clients.Config {
	return clients.Config{Project: s.opts.Project, Endpoint: s.RESTURL(), StorageEndpoint: s.GRPCAddr()}
}

// SetLatency sets the latency added to every append's response from now on.
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// Connections is the number of AppendRows RPCs opened so far (a client
// opens one per connection, and another after each failure of one).
func (s *Server) Connections() int64 { return s.connections.Load() }

// AddTable registers (or replaces) dataset.name in the fake's project. A
// replaced table gets a new etag and lastModifiedTime; its counts and rows
// are kept.
func (s *Server) AddTable(dataset, name string, t Table) error {
	path := tablePath(s.opts.Project, dataset, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.tables[path]
	if old == nil {
		old = &table{path: path, project: s.opts.Project, dataset: dataset, name: name, created: time.Now()}
		s.tables[path] = old
	}
	return old.set(t)
}

// Stats returns the counts of dataset.name (zero for an unknown table).
func (s *Server) Stats(dataset, name string) Stats {
	t := s.table(tablePath(s.opts.Project, dataset, name))
	if t == nil {
		return Stats{}
	}
	return t.stats.load()
}

// TotalStats returns the counts over all tables.
func (s *Server) TotalStats() Stats { return s.total.load() }

// Rows returns the rows acknowledged for dataset.name, in the order they
// were acknowledged (nil unless Options.KeepRows).
func (s *Server) Rows(dataset, name string) []Row {
	t := s.table(tablePath(s.opts.Project, dataset, name))
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Row(nil), t.rows...)
}

func (s *Server) table(path string) *table {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tables[path]
}

func tablePath(project, dataset, name string) string {
	return "projects/" + project + "/datasets/" + dataset + "/tables/" + name
}

// table is one registered table.
type table struct {
	path, project, dataset, name string
	created                      time.Time

	stats   counters
	patchMu sync.Mutex // serializes tables.patch

	mu       sync.Mutex // guards what follows
	spec     Table
	schema   bigquery.Schema
	version  int
	modified time.Time
	resource []byte // tables.get answer, rendered once per version
	storage  *storagepb.TableSchema
	rows     []Row
}

// set installs a new version of the table's metadata.
func (t *table) set(spec Table) error {
	sch := spec.Schema
	if sch == nil {
		sch = bqschema.ToBigQuery(spec.Columns)
	}
	st, err := storageSchema(sch)
	if err != nil {
		return fmt.Errorf("fakebq: table %s: %w", t.path, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.spec, t.schema, t.storage = spec, sch, st
	t.version++
	// Strictly increasing, even for two updates within a millisecond (the
	// REST API reports milliseconds).
	now := time.Now().Truncate(time.Millisecond)
	if !now.After(t.modified) {
		now = t.modified.Add(time.Millisecond)
	}
	t.modified = now
	t.resource, err = t.render()
	return err
}

func (t *table) etag() string { return fmt.Sprintf("fakebq-%d", t.version) }

// counters are updated atomically: the AppendRows handlers of many
// connections update them at once.
type counters struct {
	appends, rows, bytes, failed, stored atomic.Int64
}

func (c *counters) load() Stats {
	return Stats{Appends: c.appends.Load(), Rows: c.rows.Load(), Bytes: c.bytes.Load(), Failed: c.failed.Load(), Stored: c.stored.Load()}
}

// trackingListener remembers the connections it accepted, so that
// DropConnections can cut them the way a network failure would.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	return &trackedConn{Conn: c, l: l}, nil
}

type trackedConn struct {
	net.Conn
	l *trackingListener
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c.Conn)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// DropConnections closes every client connection to the gRPC endpoint, as
// a network failure or a server restart would. Nothing written is lost. A
// managedwriter stream notices on its next append, which fails with
// Unavailable ("error reading from server: EOF") even if the connection was
// idle; the append after that reconnects.
func (s *Server) DropConnections() {
	s.lis.mu.Lock()
	conns := make([]net.Conn, 0, len(s.lis.conns))
	for c := range s.lis.conns {
		conns = append(conns, c)
	}
	s.lis.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// sortedIndexes returns m's keys in increasing order.
func sortedIndexes(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for i := range m {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}
