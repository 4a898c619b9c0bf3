package emulator

import (
	"context"
	"net/http"
	"sync"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
)

// gate admits one request at a time into the emulator (concession 8). The
// emulator keeps every table of every project in one SQLite database and
// lets requests write to it concurrently: an append, a tables.get (which
// syncs its catalog, a write) and a query at once wait on SQLite's lock,
// up to its 60 s busy timeout, then fail with "database is locked" (a burst
// across three tables stalled every delivery for a minute, then failed
// them). BigQuery has no such limit, so the queue lives here, on the
// emulator's side of the seam: the REST shim holds the gate for each
// request, and emulator connections hold it from sending an AppendRows
// request until its response arrives (and around unary calls). Within one
// process that is all of the local stack; a client in another process (the
// buildpack test's binary) is not gated, and may still meet the lock.
//
// Only connections to an emulator this process serves take the gate (the
// local stack names it with Gate): a fake Storage Write server, which has no
// such lock, is not slowed, and tests of pipelined appends against it keep
// their meaning.
var gate = make(chan struct{}, 1)

// gatedEndpoints are the Storage Write endpoints of emulators this process
// serves, whose connections take the gate.
var gatedEndpoints sync.Map

// Gate marks endpoint (host:port) as the Storage Write endpoint of an
// emulator this process serves: connections DialStorage makes to it take
// the gate, as its REST shim's requests do.
func Gate(endpoint string) { gatedEndpoints.Store(endpoint, true) }

func enter(ctx context.Context) error {
	select {
	case gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func leave() { <-gate }

// gated serves a REST request inside the gate.
func gated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := enter(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer leave()
		next.ServeHTTP(w, r)
	})
}

// gatedUnary runs a unary call (GetWriteStream, ...) inside the gate.
func gatedUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if err := enter(ctx); err != nil {
		return err
	}
	defer leave()
	return invoker(ctx, method, req, reply, cc, opts...)
}

// appendGate tracks the AppendRows requests of one stream that hold the
// gate: one per request sent, released by its response, or all at once
// when the stream ends.
type appendGate struct {
	mu          sync.Mutex
	outstanding int
	done        bool
}

func (g *appendGate) sent() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		leave() // the stream is over: nothing will answer, nothing may hold the gate
		return
	}
	g.outstanding++
}

// answered releases the gate held for the oldest request.
func (g *appendGate) answered() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.outstanding > 0 {
		g.outstanding--
		leave()
	}
}

// ended releases every request still holding the gate.
func (g *appendGate) ended() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for ; g.outstanding > 0; g.outstanding-- {
		leave()
	}
	g.done = true
}

func isAppendResponse(m any) bool {
	_, ok := m.(*storagepb.AppendRowsResponse)
	return ok
}
