package emulator

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc/credentials/insecure"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// nameEveryAppend works around a BigQuery emulator routing bug (see the
// package doc, concessions 1 and 2).
//
// managedwriter names the write stream only in the first AppendRows request
// of a connection, as the API allows. The emulator (goccy/bigquery-emulator
// v0.8.1) routes a request without a stream name to an arbitrary open stream,
// even one of another table, so rows land in the wrong table. This
// interceptor remembers the stream a connection named first and fills it into
// every later request. Real BigQuery accepts the name on every request too,
// so nothing is lost by sending it; it is simply not needed there.
//
// It also works around a second bug. The emulator caches a table's schema in
// its default stream when it creates that stream, and keeps inserting with
// it: after the table is recreated with more columns (the local stack's
// schema shim does that when a column is added), their values would be
// silently dropped, where BigQuery picks up the new schema. So after
// EmulatorTableRecreated, appends to that table's default stream go to a
// default stream of the new table generation,
// ".../streams/g<generation>/_default", which the emulator creates fresh with
// the table's current schema. Streams are created only after a rebuild, not
// on every connection: creating one reads the table and syncs the emulator's
// catalog, which under concurrent appends can wait on SQLite's lock.
func nameEveryAppend(gated bool) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		s := &namedStream{ClientStream: cs, ctx: ctx, write: storagepb.NewBigQueryWriteClient(cc), gated: gated}
		context.AfterFunc(ctx, s.gate.ended)
		return s, nil
	}
}

type namedStream struct {
	grpc.ClientStream
	ctx   context.Context
	write storagepb.BigQueryWriteClient
	name  string
	gated bool // requests take the gate (an emulator of this process, see Gate)
	gate  appendGate
}

func (s *namedStream) SendMsg(m any) error {
	r, ok := m.(*storagepb.AppendRowsRequest)
	if !ok {
		return s.ClientStream.SendMsg(m)
	}
	if r.GetWriteStream() != "" {
		r = proto.Clone(r).(*storagepb.AppendRowsRequest)
		name, err := s.streamFor(r) // a unary call, gated on its own: before entering
		if err != nil {
			return err
		}
		s.name, r.WriteStream = name, name
	} else if s.name != "" {
		r = proto.Clone(r).(*storagepb.AppendRowsRequest)
		r.WriteStream = s.name
	}
	if !s.gated {
		return s.ClientStream.SendMsg(r)
	}
	if err := enter(s.ctx); err != nil {
		return err
	}
	s.gate.sent()
	if err := s.ClientStream.SendMsg(r); err != nil {
		s.gate.ended()
		return err
	}
	return nil
}

func (s *namedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.gate.ended()
		return err
	}
	if s.gated && isAppendResponse(m) {
		s.gate.answered()
	}
	return nil
}

const defaultSuffix = "/streams/_default"

var (
	generations sync.Map // table path -> int: times the table was recreated
	created     sync.Map // generation stream names already created
)

// tableRecreated records that the REST shim dropped and created
// project.dataset.table again, so appends must use a fresh default stream.
// The record is process-wide because the shim (in front of the emulator's
// REST API) and the Storage Write connections (in the functions' clients)
// are created independently; both live in this package only.
func tableRecreated(project, dataset, table string) {
	path := "projects/" + project + "/datasets/" + dataset + "/tables/" + table
	for {
		old, _ := generations.LoadOrStore(path, 0)
		if generations.CompareAndSwap(path, old, old.(int)+1) {
			return
		}
	}
}

// streamFor returns the stream the emulator should append the request's
// rows to: the request's own, or the default stream of the table's current
// generation, created if needed.
func (s *namedStream) streamFor(r *storagepb.AppendRowsRequest) (string, error) {
	name := r.GetWriteStream()
	if !strings.HasSuffix(name, defaultSuffix) {
		return name, nil
	}
	table := strings.TrimSuffix(name, defaultSuffix)
	gen, _ := generations.Load(table)
	if gen == nil || gen.(int) == 0 {
		return name, nil
	}
	alias := fmt.Sprintf("%s/streams/g%d/_default", table, gen.(int))
	if _, done := created.Load(alias); done {
		return alias, nil
	}
	if _, err := s.write.GetWriteStream(s.ctx, &storagepb.GetWriteStreamRequest{Name: alias}); err != nil {
		return "", fmt.Errorf("creating the emulator's default stream for the recreated table: %w", err)
	}
	created.Store(alias, true)
	return alias, nil
}

// DialStorage connects to the emulator's Storage Write gRPC endpoint
// (host:port) with the append-naming interceptor installed.
func DialStorage(endpoint string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	_, gated := gatedEndpoints.Load(endpoint)
	opts = append(opts, grpc.WithStreamInterceptor(nameEveryAppend(gated)))
	if gated {
		opts = append(opts, grpc.WithUnaryInterceptor(gatedUnary))
	}
	conn, err := grpc.NewClient(endpoint, opts...)
	if err != nil {
		return nil, fmt.Errorf("dialing the Storage Write emulator at %s: %w", endpoint, err)
	}
	return conn, nil
}
