package transcode

import (
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

func describeRow(md protoreflect.MessageDescriptor, b []byte) string {
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b, m); err != nil {
		return "unparsable: " + err.Error()
	}
	return prototext.MarshalOptions{}.Format(m)
}
