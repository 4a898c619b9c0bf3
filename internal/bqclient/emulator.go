package bqclient

import (
	"context"

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
func nameEveryAppend(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &namedStream{ClientStream: cs}, nil
}

type namedStream struct {
	grpc.ClientStream
	name string
}

func (s *namedStream) SendMsg(m any) error {
	if r, ok := m.(*storagepb.AppendRowsRequest); ok {
		if r.GetWriteStream() != "" {
			s.name = r.GetWriteStream()
		} else if s.name != "" {
			r = proto.Clone(r).(*storagepb.AppendRowsRequest)
			r.WriteStream = s.name
			m = r
		}
	}
	return s.ClientStream.SendMsg(m)
}
