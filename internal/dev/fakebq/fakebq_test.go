package fakebq_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/google/go-cmp/cmp"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

var columns = schema.Columns{
	{Name: "id", Type: schema.Int64, Required: true},
	{Name: "name", Type: schema.String},
	{Name: "at", Type: schema.Timestamp, Description: "when"},
	{Name: "tags", Type: schema.String, Repeated: true},
	{Name: "nested", Type: schema.Record, Fields: schema.Columns{{Name: "n", Type: schema.Float64}}},
}

func TestTableMetadata(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{})
	err := srv.AddTable("d", "t", fakebq.Table{
		Columns:          columns,
		Labels:           map[string]string{"a": "1", "b": "2"},
		Description:      "a table",
		TimePartitioning: &bigquery.TimePartitioning{Field: "at"},
		Clustering:       &bigquery.Clustering{Fields: []string{"id"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	bq, err := clients.NewBigQuery(ctx, srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	ref := bq.Dataset("d").Table("t")
	md, err := ref.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(columns, bqschema.FromBigQuery(md.Schema)); diff != "" {
		t.Errorf("schema (-registered +read):\n%s", diff)
	}
	if md.Labels["a"] != "1" || md.Description != "a table" || md.ETag == "" || md.LastModifiedTime.IsZero() ||
		md.TimePartitioning == nil || md.TimePartitioning.Field != "at" || md.TimePartitioning.Type != bigquery.DayPartitioningType ||
		md.Clustering == nil || md.Clustering.Fields[0] != "id" || md.FullID != srv.Project()+":d.t" {
		t.Errorf("metadata = %+v", md)
	}

	if _, err := bq.Dataset("d").Table("nope").Metadata(ctx); !bqerror.NotFound(err) {
		t.Errorf("unknown table: err = %v, want not found", err)
	}
	// The client library's default base path has the /bigquery/v2 prefix.
	resp, err := http.Get(srv.RESTURL() + "/bigquery/v2/projects/" + srv.Project() + "/datasets/d/tables/t")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET with /bigquery/v2: %s", resp.Status)
	}

	// tables.patch, as schema evolution sends it: conditional on the etag.
	upd := bigquery.TableMetadataToUpdate{Schema: append(md.Schema, &bigquery.FieldSchema{Name: "added", Type: bigquery.StringFieldType})}
	upd.SetLabel("c", "3")
	upd.DeleteLabel("b")
	md2, err := ref.Update(ctx, upd, md.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if md2.ETag == md.ETag || !md2.LastModifiedTime.After(md.LastModifiedTime) || len(md2.Schema) != len(columns)+1 ||
		md2.Labels["c"] != "3" || md2.Labels["a"] != "1" || md2.Labels["b"] != "" {
		t.Errorf("after update: %+v", md2)
	}
	if _, err := ref.Update(ctx, upd, md.ETag); !bqerror.PreconditionFailed(err) {
		t.Errorf("update with a stale etag: err = %v, want precondition failed", err)
	}

	// Injected REST failures: 503 is retried by the client library, 400 is not.
	srv.FailRESTNext(http.StatusServiceUnavailable)
	if _, err := ref.Metadata(ctx); err != nil {
		t.Errorf("after one 503: %v", err)
	}
	srv.FailRESTNext(http.StatusBadRequest)
	if _, err := ref.Metadata(ctx); err == nil || bqerror.IsTransient(err) {
		t.Errorf("400: err = %v, want a permanent error", err)
	}
}

// writer is a managed stream on table d.t of srv through bqcdc's client
// (clients.NewWriter, which dials the StorageEndpoint), and the message
// type of its rows.
type writer struct {
	ms  *managedwriter.ManagedStream
	msg protoreflect.MessageDescriptor
}

var testSchema = bigquery.Schema{
	{Name: "id", Type: bigquery.IntegerFieldType, Required: true},
	{Name: "name", Type: bigquery.StringFieldType},
}

func newWriter(t *testing.T, srv *fakebq.Server) (*managedwriter.Client, *writer) {
	t.Helper()
	ctx := context.Background()
	if err := srv.AddTable("d", "t", fakebq.Table{Schema: testSchema}); err != nil {
		t.Fatal(err)
	}
	mw, err := clients.NewWriter(ctx, srv.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mw.Close() })
	ss, err := adapt.BQSchemaToStorageTableSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	d, err := adapt.StorageSchemaToProto2Descriptor(ss, "root")
	if err != nil {
		t.Fatal(err)
	}
	dp, err := adapt.NormalizeDescriptor(d.(protoreflect.MessageDescriptor))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{Name: proto.String("t.proto"), Syntax: proto.String("proto2"), MessageType: []*descriptorpb.DescriptorProto{dp}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := mw.NewManagedStream(ctx,
		managedwriter.WithDestinationTable(managedwriter.TableParentFromParts(srv.Project(), "d", "t")),
		managedwriter.WithType(managedwriter.DefaultStream),
		managedwriter.WithSchemaDescriptor(dp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	return mw, &writer{ms: ms, msg: fd.Messages().Get(0)}
}

// rows encodes one row per name, with ids from first.
func (w *writer) rows(t *testing.T, first int, names ...string) [][]byte {
	t.Helper()
	var out [][]byte
	for i, n := range names {
		m := dynamicpb.NewMessage(w.msg)
		m.Set(w.msg.Fields().ByName("id"), protoreflect.ValueOfInt64(int64(first+i)))
		m.Set(w.msg.Fields().ByName("name"), protoreflect.ValueOfString(n))
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func (w *writer) append(t *testing.T, rows [][]byte, opts ...managedwriter.AppendOption) *managedwriter.AppendResult {
	t.Helper()
	res, err := w.ms.AppendRows(context.Background(), rows, opts...)
	if err != nil {
		t.Fatalf("AppendRows: %v", err)
	}
	return res
}

// mustAppend appends and waits for a successful result.
func (w *writer) mustAppend(t *testing.T, rows [][]byte) {
	t.Helper()
	if _, err := w.append(t, rows).GetResult(context.Background()); err != nil {
		t.Fatalf("append: %v", err)
	}
}

func TestAppend(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{KeepRows: true, Latency: time.Millisecond})
	mw, w := newWriter(t, srv)

	off, err := w.append(t, w.rows(t, 1, "a", "b", "c")).GetResult(ctx)
	if err != nil || off != managedwriter.NoStreamOffset {
		t.Fatalf("append = %d, %v; want no offset (default stream), nil", off, err)
	}
	off, err = w.append(t, w.rows(t, 4, "d"), managedwriter.WithOffset(7)).GetResult(ctx)
	if err != nil || off != 7 {
		t.Fatalf("append at offset 7 = %d, %v", off, err)
	}
	want := fakebq.Stats{Appends: 2, Rows: 4, Stored: 4}
	got := srv.Stats("d", "t")
	want.Bytes = got.Bytes
	if got != want || got.Bytes == 0 || srv.TotalStats() != got || srv.Connections() != 1 {
		t.Errorf("stats = %+v (total %+v, %d connections), want %+v on 1 connection", got, srv.TotalStats(), srv.Connections(), want)
	}
	var names []string
	for _, r := range srv.Rows("d", "t") {
		m, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, fakebq.StringField(m, "name"))
	}
	if strings.Join(names, ",") != "a,b,c,d" {
		t.Errorf("rows kept: %v", names)
	}

	// The stream's description: the schema only in the FULL view, as the API documents.
	name := managedwriter.TableParentFromParts(srv.Project(), "d", "t") + "/streams/_default"
	full, err := mw.GetWriteStream(ctx, &storagepb.GetWriteStreamRequest{Name: name, View: storagepb.WriteStreamView_FULL})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := adapt.StorageTableSchemaToBQSchema(full.GetTableSchema()); len(got) != 2 || got[0].Name != "id" || !got[0].Required {
		t.Errorf("FULL view schema = %v", full.GetTableSchema())
	}
	basic, err := mw.GetWriteStream(ctx, &storagepb.GetWriteStreamRequest{Name: name})
	if err != nil || basic.GetTableSchema() != nil || basic.GetType() != storagepb.WriteStream_COMMITTED {
		t.Errorf("BASIC view = %v, %v", basic, err)
	}
	_, err = mw.GetWriteStream(ctx, &storagepb.GetWriteStreamRequest{Name: managedwriter.TableParentFromParts(srv.Project(), "d", "nope") + "/streams/_default"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown table's stream: %v", err)
	}
}

// TestRefusedRows shows how rows BigQuery refuses reach a managedwriter
// client: see fakebq.Fault.
func TestRefusedRows(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{})
	_, w := newWriter(t, srv)
	srv.SetFault(fakebq.RefuseRowsWhere(func(m *dynamicpb.Message) bool {
		return fakebq.StringField(m, "name") == "bad"
	}, "Field name: bad value"))

	res := w.append(t, w.rows(t, 1, "ok", "bad", "ok", "bad"))
	off, err := res.GetResult(ctx)
	if off != managedwriter.NoStreamOffset || status.Code(err) != codes.InvalidArgument || !bqerror.RowsRefused(err) {
		t.Fatalf("GetResult = %d, %v; want no offset and InvalidArgument", off, err)
	}
	// managedwriter records the response's status as the write's error (a
	// gRPC status error, not an *apierror.APIError: FullResponse converts
	// only when no error was recorded), and the row errors are not in it.
	var apiErr *apierror.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("error is an *apierror.APIError")
	}
	if st, ok := status.FromError(err); !ok || len(st.Details()) != 0 {
		t.Errorf("the error carries details %v; the row errors are expected only in the response", st.Details())
	}
	resp, err2 := res.FullResponse(ctx)
	if status.Code(err2) != codes.InvalidArgument {
		t.Errorf("FullResponse error = %v", err2)
	}
	want := []bqerror.RowError{{Index: 1, Message: "Field name: bad value"}, {Index: 3, Message: "Field name: bad value"}}
	if diff := cmp.Diff(want, bqerror.RowErrors(resp)); diff != "" {
		t.Errorf("row errors (-want +got):\n%s", diff)
	}
	if resp.GetRowErrors()[0].GetCode() != storagepb.RowError_FIELDS_ERROR {
		t.Errorf("row error code = %v", resp.GetRowErrors()[0].GetCode())
	}
	if st := srv.Stats("d", "t"); st.Stored != 0 || st.Failed != 1 {
		t.Errorf("a refused append wrote rows: %+v", st)
	}

	// The connection stays usable: the good rows, sent again, are written.
	w.mustAppend(t, w.rows(t, 1, "ok", "ok"))
	if st := srv.Stats("d", "t"); st.Stored != 2 || srv.Connections() != 1 {
		t.Errorf("after re-appending: %+v on %d connections", st, srv.Connections())
	}
}

func TestInjectedStatus(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{})
	_, w := newWriter(t, srv)
	srv.Next(fakebq.Fault{Status: status.New(codes.Unavailable, "try again")})
	_, err := w.append(t, w.rows(t, 1, "a")).GetResult(ctx)
	if status.Code(err) != codes.Unavailable || !bqerror.IsTransient(err) {
		t.Fatalf("err = %v, want Unavailable", err)
	}
	w.mustAppend(t, w.rows(t, 1, "a"))
	if st := srv.Stats("d", "t"); st.Stored != 1 || st.Failed != 1 || srv.Connections() != 1 {
		t.Errorf("stats %+v on %d connections; an in-band error keeps the connection", st, srv.Connections())
	}
}

func TestDrop(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{})
	_, w := newWriter(t, srv)
	w.mustAppend(t, w.rows(t, 1, "a"))

	// Append 2 ends the RPC, but only once appends 3 and 4 are on it too.
	hold, received := make(chan struct{}), make(chan struct{})
	srv.SetFault(func(a *fakebq.Append) fakebq.Fault {
		switch a.Seq {
		case 2:
			return fakebq.Fault{Drop: status.New(codes.Unavailable, "stream closed"), Hold: hold}
		case 4:
			close(received)
		}
		return fakebq.Fault{}
	})
	results := []*managedwriter.AppendResult{
		w.append(t, w.rows(t, 2, "b")), w.append(t, w.rows(t, 3, "c")), w.append(t, w.rows(t, 4, "d")),
	}
	<-received
	close(hold)
	// Every append in flight on the RPC fails with its status, and none is
	// written.
	for i, res := range results {
		if _, err := res.GetResult(ctx); status.Code(err) != codes.Unavailable {
			t.Errorf("append %d: %v, want Unavailable", i+2, err)
		}
	}
	if st := srv.Stats("d", "t"); st.Stored != 1 || st.Appends != 4 {
		t.Errorf("stats %+v, want 4 appends, 1 row stored", st)
	}
	// The client reconnects for the next append.
	w.mustAppend(t, w.rows(t, 5, "e"))
	if srv.Connections() != 2 {
		t.Errorf("%d connections, want 2", srv.Connections())
	}
}

func TestDropConnections(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{})
	_, w := newWriter(t, srv)
	w.mustAppend(t, w.rows(t, 1, "a"))
	srv.DropConnections()
	// The append after a cut connection may fail (retryably), either when it
	// is sent (AppendRows returns io.EOF from the dead stream) or in its
	// result, or be sent on a new connection; within a few attempts the
	// client is writing again.
	for i := 0; ; i++ {
		res, err := w.ms.AppendRows(ctx, w.rows(t, 2, "b"))
		if err == nil {
			_, err = res.GetResult(ctx)
		}
		if err == nil {
			break
		}
		if !bqerror.IsTransient(err) || i == 3 {
			t.Fatalf("attempt %d after the connection was cut: %v", i, err)
		}
		t.Logf("attempt %d after the connection was cut: %v", i, err)
	}
}

func TestRequestTooLarge(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{})
	_, w := newWriter(t, srv)
	big := strings.Repeat("x", 1<<20)
	names := make([]string, 11)
	for i := range names {
		names[i] = big
	}
	_, err := w.append(t, w.rows(t, 1, names...)).GetResult(ctx)
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("an 11 MiB append: %v, want InvalidArgument", err)
	}
	w.mustAppend(t, w.rows(t, 1, "small"))
}

// TestResponsesInOrder: responses are pipelined with different latencies
// but still come back in request order (managedwriter pairs them with
// requests by order alone); the echoed offsets show the pairing.
func TestResponsesInOrder(t *testing.T) {
	ctx := context.Background()
	srv := fakebq.Start(t, fakebq.Options{})
	_, w := newWriter(t, srv)
	srv.SetFault(func(a *fakebq.Append) fakebq.Fault {
		return fakebq.Fault{Latency: time.Duration(5-a.Seq%5) * time.Millisecond}
	})
	var results []*managedwriter.AppendResult
	for i := range 20 {
		results = append(results, w.append(t, w.rows(t, i, "x"), managedwriter.WithOffset(int64(i))))
	}
	for i, res := range results {
		if off, err := res.GetResult(ctx); err != nil || off != int64(i) {
			t.Errorf("append %d: offset %d, %v", i, off, err)
		}
	}
}
