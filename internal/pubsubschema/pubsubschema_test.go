package pubsubschema_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/bqcdc/bqcdc/internal/dev/avrocases"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/pubsubschema"
	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const schemaName = "projects/p/schemas/customers"

// countReactor counts calls and lets pstest handle them.
type countReactor struct{ n *atomic.Int32 }

func (c countReactor) React(any) (bool, any, error) {
	c.n.Add(1)
	return false, nil, nil
}

// newPubSub starts pstest and returns a schema client and a Pub/Sub client
// connected to it.
func newPubSub(t *testing.T, opts ...pstest.ServerReactorOption) (*pubsubapi.SchemaClient, *pubsub.Client) {
	t.Helper()
	ctx := context.Background()
	srv := pstest.NewServer(opts...)
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := pubsubapi.NewSchemaClient(ctx, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	// GetSchema retries Unavailable for up to a minute by default; the
	// tests want the first answer.
	sc.CallOptions.GetSchema = nil
	ps, err := pubsub.NewClient(ctx, "p", option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ps.Close()
		sc.Close()
		conn.Close()
		srv.Close()
	})
	return sc, ps
}

func createSchema(t *testing.T, sc *pubsubapi.SchemaClient, id string, typ pubsubpb.Schema_Type, definition string) *pubsubpb.Schema {
	t.Helper()
	s, err := sc.CreateSchema(context.Background(), &pubsubpb.CreateSchemaRequest{
		Parent: "projects/p", SchemaId: id, Schema: &pubsubpb.Schema{Type: typ, Definition: definition}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type published struct {
	name string
	data []byte
	rev  string
}

// TestLookupOverPstest publishes the same records BINARY- and
// JSON-encoded to topics with a schema, receives them with a real
// subscriber, and decodes them through the schema service.
func TestLookupOverPstest(t *testing.T) {
	var gets atomic.Int32
	sc, ps := newPubSub(t, pstest.ServerReactorOption{FuncName: "GetSchema", Reactor: countReactor{&gets}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rev1 := createSchema(t, sc, "customers", pubsubpb.Schema_AVRO, avrocases.CustomerV1).RevisionId
	committed, err := sc.CommitSchema(ctx, &pubsubpb.CommitSchemaRequest{Name: schemaName,
		Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: avrocases.CustomerV2}})
	if err != nil {
		t.Fatal(err)
	}
	rev2 := committed.RevisionId
	v1, v2 := avrocases.Parse(t, avrocases.CustomerV1), avrocases.Parse(t, avrocases.CustomerV2)

	msgs := map[string][]published{} // by encoding
	for _, tc := range avrocases.JSONCases {
		bin, err := avro.Marshal(v2, tc.Rec)
		if err != nil {
			t.Fatal(err)
		}
		msgs[formats.EncodingBinary] = append(msgs[formats.EncodingBinary], published{tc.Name, bin, rev2})
		msgs[formats.EncodingJSON] = append(msgs[formats.EncodingJSON], published{tc.Name, []byte(tc.JSON), rev2})
	}
	old, err := avro.Marshal(v1, avrocases.JSONCases[0].Rec)
	if err != nil {
		t.Fatal(err)
	}
	msgs[formats.EncodingBinary] = append(msgs[formats.EncodingBinary], published{"revision 1", old, rev1})

	decoded := map[string]map[string]map[string]any{} // encoding -> case -> record
	schemas := pubsubschema.New(sc)
	for enc, list := range msgs {
		received := publishAndReceive(t, ctx, ps, enc, list)
		decoded[enc] = map[string]map[string]any{}
		for _, p := range list {
			m := received[p.name]
			// Pub/Sub adds these on delivery; pstest does not.
			attrs := map[string]string{formats.AttrSchemaName: schemaName, formats.AttrSchemaRevision: p.rev, formats.AttrSchemaEncoding: enc}
			for k, v := range m.Attributes {
				attrs[k] = v
			}
			if f := formats.Detect(attrs, m.Data); f != formats.PubSubSchema {
				t.Fatalf("%s %s: Detect = %s", enc, p.name, f)
			}
			w, err := schemas.Lookup(ctx, attrs)
			if err != nil {
				t.Fatal(err)
			}
			if want := "pubsub:" + schemaName + "@" + p.rev + "/" + strings.ToLower(enc); w.Key != want {
				t.Errorf("key %s, want %s", w.Key, want)
			}
			rec, err := w.Decode(m.Data)
			if err != nil {
				t.Fatalf("%s %s: %v", enc, p.name, err)
			}
			decoded[enc][p.name] = rec
		}
	}
	for _, tc := range avrocases.JSONCases {
		if d := cmp.Diff(decoded[formats.EncodingBinary][tc.Name], decoded[formats.EncodingJSON][tc.Name], equateRats); d != "" {
			t.Errorf("%s: JSON and BINARY decode differently (-binary +json):\n%s", tc.Name, d)
		}
	}
	first := decoded[formats.EncodingBinary][avrocases.JSONCases[0].Name]
	if first["loyalty"] != int64(7) || first["balance"].(*big.Rat).FloatString(2) != "1234.56" {
		t.Errorf("record 1: loyalty %v balance %v", first["loyalty"], first["balance"])
	}
	if _, ok := decoded[formats.EncodingBinary]["revision 1"]["loyalty"]; ok {
		t.Error("a revision 1 message decoded with revision 2's field")
	}

	// Revisions are fetched once each, however many lookups race.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := schemas.Lookup(ctx, map[string]string{formats.AttrSchemaName: schemaName, formats.AttrSchemaRevision: rev2, formats.AttrSchemaEncoding: formats.EncodingJSON}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := gets.Load(); n != 2 {
		t.Errorf("GetSchema called %d times, want 2 (one per revision)", n)
	}
}

func publishAndReceive(t *testing.T, ctx context.Context, ps *pubsub.Client, enc string, list []published) map[string]*pubsub.Message {
	t.Helper()
	topic := "projects/p/topics/customers-" + strings.ToLower(enc)
	if _, err := ps.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: topic, SchemaSettings: &pubsubpb.SchemaSettings{
		Schema: schemaName, Encoding: pubsubpb.Encoding(pubsubpb.Encoding_value[enc])}}); err != nil {
		t.Fatal(err)
	}
	sub := "projects/p/subscriptions/customers-" + strings.ToLower(enc)
	if _, err := ps.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	pub := ps.Publisher(topic)
	defer pub.Stop()
	for _, p := range list {
		if _, err := pub.Publish(ctx, &pubsub.Message{Data: p.data, Attributes: map[string]string{"case": p.name}}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[string]*pubsub.Message{}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	err := ps.Subscriber(sub).Receive(rctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		mu.Lock()
		defer mu.Unlock()
		got[m.Attributes["case"]] = m
		if len(got) == len(list) {
			stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(list) {
		t.Fatalf("received %d of %d messages", len(got), len(list))
	}
	return got
}

var equateRats = cmp.Comparer(func(a, b *big.Rat) bool { return a.Cmp(b) == 0 })

func TestLookupErrors(t *testing.T) {
	sc, _ := newPubSub(t)
	ctx := context.Background()
	good := createSchema(t, sc, "customers", pubsubpb.Schema_AVRO, avrocases.CustomerV2)
	proto := createSchema(t, sc, "proto", pubsubpb.Schema_PROTOCOL_BUFFER, `syntax = "proto3"; message M { string s = 1; }`)
	// pstest stores any definition; the real service would refuse these two.
	broken := createSchema(t, sc, "broken", pubsubpb.Schema_AVRO, `{"type":"record","name":"R","fields":[`)
	scalar := createSchema(t, sc, "scalar", pubsubpb.Schema_AVRO, `"string"`)
	attrs := func(name, rev, enc string) map[string]string {
		return map[string]string{formats.AttrSchemaName: name, formats.AttrSchemaRevision: rev, formats.AttrSchemaEncoding: enc}
	}
	tests := []struct {
		name    string
		attrs   map[string]string
		wantErr string
		code    codes.Code // of the RPC, when there was one
	}{
		{name: "unknown revision", attrs: attrs(schemaName, "deadbeef", formats.EncodingBinary), wantErr: "not found", code: codes.NotFound},
		{name: "unknown schema", attrs: attrs("projects/p/schemas/nope", good.RevisionId, formats.EncodingBinary), wantErr: "not found", code: codes.NotFound},
		{name: "protobuf schema", attrs: attrs(proto.Name, proto.RevisionId, formats.EncodingBinary), wantErr: "is PROTOCOL_BUFFER, not an Avro schema"},
		{name: "invalid Avro", attrs: attrs(broken.Name, broken.RevisionId, formats.EncodingJSON), wantErr: "parsing the Avro definition"},
		{name: "not a record", attrs: attrs(scalar.Name, scalar.RevisionId, formats.EncodingJSON), wantErr: "top-level Avro type is string, want a record"},
		{name: "no revision", attrs: attrs(schemaName, "", formats.EncodingBinary), wantErr: "has no googclient_schemarevisionid"},
		{name: "unknown encoding", attrs: attrs(schemaName, good.RevisionId, "XML"), wantErr: `googclient_schemaencoding="XML"`},
	}
	schemas := pubsubschema.New(sc)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schemas.Lookup(ctx, tc.attrs)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
			if !failure.IsPermanent(err) || failure.StageOf(err) != failure.StageRegistry {
				t.Errorf("error %q: permanent %v stage %q, want permanent at the registry stage", err, failure.IsPermanent(err), failure.StageOf(err))
			}
			if tc.code != codes.OK && status.Code(err) != tc.code {
				t.Errorf("status %s, want %s", status.Code(err), tc.code)
			}
		})
	}
}

func TestLookupRetryable(t *testing.T) {
	attrs := map[string]string{formats.AttrSchemaName: schemaName, formats.AttrSchemaRevision: "r1", formats.AttrSchemaEncoding: formats.EncodingBinary}
	for _, code := range []codes.Code{codes.Unavailable, codes.PermissionDenied, codes.Internal} {
		t.Run(code.String(), func(t *testing.T) {
			sc, _ := newPubSub(t, pstest.WithErrorInjection("GetSchema", code, "injected"))
			_, err := pubsubschema.New(sc).Lookup(context.Background(), attrs)
			if err == nil || failure.IsPermanent(err) || status.Code(err) != code {
				t.Fatalf("error %v (%s), want a retryable %s", err, status.Code(err), code)
			}
		})
	}
	t.Run("caller gives up", func(t *testing.T) {
		sc, _ := newPubSub(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := pubsubschema.New(sc).Lookup(ctx, attrs)
		if err == nil || failure.IsPermanent(err) || !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want a retryable cancellation", err)
		}
	})
}

// A schema name is an attribute any publisher sets: one in a project the
// deployment does not read from is refused at once, permanently, without a
// fetch that would fail with PermissionDenied and be retried.
func TestOnlyProjects(t *testing.T) {
	var gets atomic.Int32
	sc, _ := newPubSub(t, pstest.ServerReactorOption{FuncName: "GetSchema", Reactor: countReactor{&gets}})
	schemas := pubsubschema.New(sc).OnlyProjects("p")
	for _, name := range []string{"projects/other/schemas/customers", "projects/p2/schemas/x", "elsewhere/p/schemas/x", "projects/"} {
		_, err := schemas.Lookup(context.Background(), map[string]string{formats.AttrSchemaName: name, formats.AttrSchemaRevision: "r1", formats.AttrSchemaEncoding: formats.EncodingBinary})
		if !failure.IsPermanent(err) || failure.StageOf(err) != failure.StageRegistry || !strings.Contains(err.Error(), "not in a project") {
			t.Errorf("%s: %v, want a permanent registry error", name, err)
		}
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("%d schema fetches, want none", n)
	}
}
