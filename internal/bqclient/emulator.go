package bqclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// nameEveryAppend works around a BigQuery emulator routing bug, and is only
// installed on emulator connections.
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
// its default stream when the stream is first used, and keeps inserting
// with that schema: after a table gains columns (schema evolution) their
// values are silently dropped, where BigQuery picks up the new schema. So
// on emulator connections a writer schema other than the first one a table
// was written with in this process gets a default stream of its own: the
// interceptor asks the emulator for ".../streams/s<hash>/_default" (which
// the emulator creates fresh, with the table's current schema) and sends the
// rows there. The first schema keeps the real default stream, so the common
// case makes no extra call (creating a stream reads the table, and under
// concurrent appends the emulator's SQLite can keep that read waiting).
func nameEveryAppend(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &namedStream{ClientStream: cs, ctx: ctx, write: storagepb.NewBigQueryWriteClient(cc)}, nil
}

type namedStream struct {
	grpc.ClientStream
	ctx   context.Context
	write storagepb.BigQueryWriteClient
	name  string
}

func (s *namedStream) SendMsg(m any) error {
	if r, ok := m.(*storagepb.AppendRowsRequest); ok {
		if r.GetWriteStream() != "" {
			r = proto.Clone(r).(*storagepb.AppendRowsRequest)
			name, err := s.perSchema(r)
			if err != nil {
				return err
			}
			s.name, r.WriteStream, m = name, name, r
		} else if s.name != "" {
			r = proto.Clone(r).(*storagepb.AppendRowsRequest)
			r.WriteStream = s.name
			m = r
		}
	}
	return s.ClientStream.SendMsg(m)
}

const defaultSuffix = "/streams/_default"

// firstSchema maps a default stream name to the hash of the first writer
// schema sent to it by this process.
var firstSchema sync.Map

// perSchema returns the default stream the emulator should use for the
// writer schema the request announces (the request's own stream if it is
// not a default stream or announces none), creating it if needed.
func (s *namedStream) perSchema(r *storagepb.AppendRowsRequest) (string, error) {
	name := r.GetWriteStream()
	desc := r.GetProtoRows().GetWriterSchema().GetProtoDescriptor()
	if !strings.HasSuffix(name, defaultSuffix) || desc == nil {
		return name, nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(desc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:6])
	if first, _ := firstSchema.LoadOrStore(name, hash); first == hash {
		return name, nil
	}
	alias := strings.TrimSuffix(name, defaultSuffix) + "/streams/s" + hash + "/_default"
	if _, err := s.write.GetWriteStream(s.ctx, &storagepb.GetWriteStreamRequest{Name: alias}); err != nil {
		return "", fmt.Errorf("creating the emulator's default stream for this schema: %w", err)
	}
	return alias, nil
}
