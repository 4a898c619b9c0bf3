package fakebq

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// rowsRefused is BigQuery's text for an append refused for its rows.
const rowsRefused = "Errors found while processing rows. Please refer to the row_errors field for details. The list may not be complete because of the size limitations."

// writeService is the Storage Write gRPC service.
type writeService struct {
	storagepb.UnimplementedBigQueryWriteServer
	s *Server
}

const defaultStream = "/streams/_default"

// streamTable returns the table of a default stream's name.
func (s *Server) streamTable(name string) (*table, error) {
	path, ok := strings.CutSuffix(name, defaultStream)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "fakebq serves only default streams (…%s); got %q", defaultStream, name)
	}
	t := s.table(path)
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "Requested entity was not found. Entity: %s", name)
	}
	return t, nil
}

// GetWriteStream describes a default stream. managedwriter calls it when a
// managed stream opens (BASIC view, for the location). As in the API, only
// the FULL view carries the table schema.
func (w *writeService) GetWriteStream(_ context.Context, req *storagepb.GetWriteStreamRequest) (*storagepb.WriteStream, error) {
	t, err := w.s.streamTable(req.GetName())
	if err != nil {
		return nil, err
	}
	ws := &storagepb.WriteStream{
		Name:       req.GetName(),
		Type:       storagepb.WriteStream_COMMITTED, // the default stream's type
		CreateTime: timestamppb.New(t.created),
		WriteMode:  storagepb.WriteStream_INSERT,
		Location:   w.s.opts.Location,
	}
	if req.GetView() == storagepb.WriteStreamView_FULL {
		t.mu.Lock()
		ws.TableSchema = t.storage
		t.mu.Unlock()
	}
	return ws, nil
}

// reply is the fake's answer to one request, sent once due.
type reply struct {
	due    time.Time
	hold   <-chan struct{}
	resp   *storagepb.AppendRowsResponse
	drop   error  // end the RPC with this instead of answering
	commit func() // writes the rows; run just before the acknowledgement
}

// conn is the state of one AppendRows RPC: the stream its requests go to
// (named in the first request, and again whenever it changes) and the
// writer schema (likewise).
type conn struct {
	stream string
	table  *table
	err    error // the named stream does not exist
	schema *writerSchema
}

// AppendRows receives requests on one goroutine and answers them, in
// order, on this one, each when due: requests are not held up behind the
// latency of the ones before them (see the package doc).
func (w *writeService) AppendRows(stream storagepb.BigQueryWrite_AppendRowsServer) error {
	s := w.s
	s.connections.Add(1)
	ctx := stream.Context()
	replies := make(chan reply, 1024)
	recvErr := make(chan error, 1)
	go func() {
		defer close(replies)
		var c conn
		for {
			req, err := stream.Recv()
			if err != nil {
				if err != io.EOF {
					recvErr <- err
				}
				return
			}
			select {
			case replies <- s.handle(&c, req, time.Now()):
			case <-ctx.Done():
				return
			}
		}
	}()
	var timer *time.Timer
	for r := range replies {
		if d := time.Until(r.due); d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		}
		if r.hold != nil {
			select {
			case <-r.hold:
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		}
		if r.drop != nil {
			// Returning ends the RPC; the receiving goroutine stops once
			// gRPC cancels the stream's context.
			return r.drop
		}
		if r.commit != nil {
			r.commit()
		}
		if err := stream.Send(r.resp); err != nil {
			return err
		}
	}
	select {
	case err := <-recvErr:
		return err
	default:
		return nil
	}
}

// handle decides the answer to one request.
func (s *Server) handle(c *conn, req *storagepb.AppendRowsRequest, now time.Time) reply {
	due := now.Add(time.Duration(s.latency.Load()))
	if name := req.GetWriteStream(); name != "" && name != c.stream {
		c.stream = name
		c.table, c.err = s.streamTable(name)
	}
	if ws := req.GetProtoRows().GetWriterSchema(); ws != nil {
		c.schema = &writerSchema{proto: ws.GetProtoDescriptor()}
	}
	resp := &storagepb.AppendRowsResponse{WriteStream: c.stream}
	inBand := func(st *status.Status) reply {
		resp.Response = &storagepb.AppendRowsResponse_Error{Error: st.Proto()}
		return reply{due: due, resp: resp}
	}
	switch {
	case c.stream == "":
		// BigQuery ends the connection: it cannot tell which stream is meant.
		return reply{due: due, drop: status.Error(codes.InvalidArgument, "The first AppendRows request of a connection must name the write stream")}
	case c.err != nil:
		st, _ := status.FromError(c.err)
		return inBand(st)
	case req.GetArrowRows() != nil:
		return inBand(status.New(codes.InvalidArgument, "fakebq accepts only proto rows"))
	case c.schema == nil:
		return inBand(status.New(codes.InvalidArgument, "Invalid proto schema: the first AppendRows request of a connection must carry the writer schema"))
	}
	t := c.table
	rows := req.GetProtoRows().GetRows().GetSerializedRows()
	var size int64
	for _, r := range rows {
		size += int64(len(r))
	}
	seq := t.stats.appends.Add(1)
	t.stats.rows.Add(int64(len(rows)))
	t.stats.bytes.Add(size)
	s.total.appends.Add(1)
	s.total.rows.Add(int64(len(rows)))
	s.total.bytes.Add(size)
	failed := func() {
		t.stats.failed.Add(1)
		s.total.failed.Add(1)
	}
	if n := proto.Size(req); n > MaxRequestBytes {
		failed()
		return inBand(status.Newf(codes.InvalidArgument, "AppendRows request too large: %d limit %d", n, MaxRequestBytes))
	}
	offset := int64(-1)
	if o := req.GetOffset(); o != nil {
		offset = o.GetValue()
	}
	a := &Append{Project: t.project, Dataset: t.dataset, Table: t.name, Stream: c.stream, Seq: seq, Rows: rows, Offset: offset, schema: c.schema}
	f := s.faultFor(a)
	due = due.Add(f.Latency)
	switch {
	case f.Drop != nil:
		failed()
		return reply{due: due, hold: f.Hold, drop: f.Drop.Err()}
	case f.Status != nil && f.Status.Code() != codes.OK:
		failed()
		r := inBand(f.Status)
		r.hold = f.Hold
		return r
	case len(f.RefuseRows) > 0:
		failed()
		resp.Response = &storagepb.AppendRowsResponse_Error{Error: status.New(codes.InvalidArgument, fmt.Sprintf("%s Entity: %s", rowsRefused, c.stream)).Proto()}
		for _, i := range sortedIndexes(f.RefuseRows) {
			resp.RowErrors = append(resp.RowErrors, &storagepb.RowError{Index: int64(i), Code: storagepb.RowError_FIELDS_ERROR, Message: f.RefuseRows[i]})
		}
		return reply{due: due, hold: f.Hold, resp: resp}
	}
	result := &storagepb.AppendRowsResponse_AppendResult{}
	if offset >= 0 {
		result.Offset = wrapperspb.Int64(offset)
	}
	resp.Response = &storagepb.AppendRowsResponse_AppendResult_{AppendResult: result}
	schema := c.schema
	return reply{due: due, hold: f.Hold, resp: resp, commit: func() {
		t.stats.stored.Add(int64(len(rows)))
		s.total.stored.Add(int64(len(rows)))
		if s.keepRows {
			t.mu.Lock()
			for _, r := range rows {
				t.rows = append(t.rows, Row{Data: r, schema: schema})
			}
			t.mu.Unlock()
		}
	}}
}
