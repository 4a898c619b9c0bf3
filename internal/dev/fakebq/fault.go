package fakebq

import (
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Fault is what the fake does to one append besides answering it. The zero
// Fault acknowledges the append. Drop wins over Status, Status over
// RefuseRows.
//
// How each reaches a managedwriter client (v1.86.2, without
// EnableWriteRetries, as bqcdc runs it; checked by this package's tests):
//
//   - RefuseRows: the response carries error {code: 3 INVALID_ARGUMENT,
//     message "Errors found while processing rows. …"} and row_errors
//     [{index, code: FIELDS_ERROR, message}], and no row of the request is
//     written — the shape BigQuery documents for rows it cannot accept.
//     managedwriter does not retry INVALID_ARGUMENT; it records the
//     response's status as the write's error (connection.go:
//     processRetry → markDone(resp, grpcstatus.ErrorProto(resp.Error))).
//     So AppendResult.GetResult returns offset -1 and a plain gRPC status
//     error, code InvalidArgument, with the response's message and no
//     details (not an *apierror.APIError: FullResponse converts only when
//     no error was recorded). The row errors are only in the response:
//     AppendResult.FullResponse returns a copy of it together with that
//     error, and bqerror.RowErrors reads them from it. The connection
//     stays open.
//   - Status: the response carries that error in-band and nothing is
//     written. GetResult/FullResponse return an error with its code (and the
//     response); the connection stays open, and the next append uses it.
//   - Drop: the AppendRows RPC ends with that status, as when BigQuery
//     closes a stream. This request and every one still waiting for its
//     response on the connection fail with that status and are not written;
//     the client opens a new RPC for its next append.
//   - Latency: added to the server's latency for this response.
//   - Hold: the response (or the drop) waits, after Latency, until Hold is
//     closed; the responses behind it on its connection wait too, as they
//     would behind a slow append. Tests use it to have several appends in
//     flight at a known moment, without timing.
type Fault struct {
	Latency    time.Duration
	Hold       <-chan struct{}
	RefuseRows map[int]string // row index in the request → error message
	Status     *status.Status
	Drop       *status.Status
}

// FaultFunc decides the fault for an append; it is called once per
// request, on the connection's receiving goroutine (so concurrently for
// different connections).
type FaultFunc func(*Append) Fault

// Append is one AppendRows request, as a FaultFunc sees it.
type Append struct {
	Project, Dataset, Table string
	Stream                  string
	// Seq numbers the table's appends from 1, in the order they arrived.
	Seq    int64
	Rows   [][]byte
	Offset int64 // -1 when the request gives none
	schema *writerSchema
}

// Decode decodes row i with the writer schema the request was sent with.
func (a *Append) Decode(i int) (*dynamicpb.Message, error) { return a.schema.decode(a.Rows[i]) }

// Decode decodes the row with its writer schema.
func (r Row) Decode() (*dynamicpb.Message, error) { return r.schema.decode(r.Data) }

// Schema is the writer schema the row was appended with.
func (r Row) Schema() *descriptorpb.DescriptorProto { return r.schema.proto }

// writerSchema is a writer schema as a connection received it, with its
// message descriptor built on first use: managedwriter sends a writer
// schema only when a connection starts or the schema changes, so the rows
// of a connection share one, and nothing is built unless a row is decoded.
type writerSchema struct {
	proto *descriptorpb.DescriptorProto
	once  sync.Once
	md    protoreflect.MessageDescriptor
	err   error
}

func (w *writerSchema) decode(data []byte) (*dynamicpb.Message, error) {
	if w == nil {
		return nil, fmt.Errorf("fakebq: the row has no writer schema")
	}
	w.once.Do(func() {
		// managedwriter sends normalized descriptors: self-contained (nested
		// types inside), proto2.
		fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
			Name:        proto.String("fakebq_writer_schema.proto"),
			Syntax:      proto.String("proto2"),
			MessageType: []*descriptorpb.DescriptorProto{w.proto},
		}, nil)
		if err != nil {
			w.err = fmt.Errorf("fakebq: writer schema: %w", err)
			return
		}
		w.md = fd.Messages().Get(0)
	})
	if w.err != nil {
		return nil, w.err
	}
	m := dynamicpb.NewMessage(w.md)
	if err := proto.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("fakebq: decoding a row: %w", err)
	}
	return m, nil
}

// SetFault makes f decide the fault of every append from now on (after the
// faults queued by Next); nil removes it.
func (s *Server) SetFault(f FaultFunc) {
	s.faultMu.Lock()
	s.fault = f
	s.faultMu.Unlock()
}

// Next queues faults for the next appends, one each, in arrival order
// across all tables and connections; they take precedence over SetFault's.
func (s *Server) Next(faults ...Fault) {
	s.faultMu.Lock()
	s.next = append(s.next, faults...)
	s.faultMu.Unlock()
}

func (s *Server) faultFor(a *Append) Fault {
	s.faultMu.Lock()
	if len(s.next) > 0 {
		f := s.next[0]
		s.next = s.next[1:]
		s.faultMu.Unlock()
		return f
	}
	f := s.fault
	s.faultMu.Unlock()
	if f == nil {
		return Fault{}
	}
	return f(a)
}

// RefuseRowsWhere returns a FaultFunc refusing, with message, the rows for
// which bad is true (rows are decoded with their writer schema; a row that
// cannot be decoded is refused too, as BigQuery would).
func RefuseRowsWhere(bad func(row *dynamicpb.Message) bool, message string) FaultFunc {
	return func(a *Append) Fault {
		var refused map[int]string
		for i := range a.Rows {
			m, err := a.Decode(i)
			msg := message
			if err != nil {
				msg = err.Error()
			}
			if err != nil || bad(m) {
				if refused == nil {
					refused = map[int]string{}
				}
				refused[i] = msg
			}
		}
		return Fault{RefuseRows: refused}
	}
}

// StringField returns a string field of a decoded row ("" when unset), for
// RefuseRowsWhere predicates.
func StringField(m *dynamicpb.Message, name string) string {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil || !m.Has(fd) {
		return ""
	}
	return m.Get(fd).String()
}
