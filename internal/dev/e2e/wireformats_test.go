package e2e

import (
	"context"
	"os"
	"testing"

	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/hamba/avro/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestOtherWireFormats sends the same source's changes in the formats other
// than Confluent Avro — Pub/Sub schema-encoded Avro (the revision fetched
// from pstest's schema service by the function), Debezium JSON with its
// schema, and Debezium JSON without it (read with the changelog's reader
// schema) — through the local stack, and checks each lands as a row.
func TestOtherWireFormats(t *testing.T) {
	ctx := context.Background()
	sc, err := pubsubapi.NewSchemaClient(ctx, option.WithEndpoint(stack.PubSubAddr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	text := testfile.Read(t, "testdata/schemas/"+catalog.Subject(evo)+".avsc")
	created, err := sc.CreateSchema(ctx, &pubsubpb.CreateSchemaRequest{Parent: "projects/" + stack.Project, SchemaId: "evo-customers",
		Schema: &pubsubpb.Schema{Type: pubsubpb.Schema_AVRO, Definition: text}})
	if err != nil {
		t.Fatal(err)
	}
	schema, err := registry.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := avro.Config{}.Freeze().Marshal(schema, mysqlEnvelope("c", 500, customer(50, "Pia", "5.55")))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile("../../formats/testdata/debezium/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	withSchema := append(append(append([]byte(`{"schema":`), read("customers.schema.json")...), `,"payload":`...), read("customers-create.payload.json")...)
	withSchema = append(withSchema, '}')

	base := delivered()
	type want struct{ id, first, op string }
	ids := map[string]want{
		"Pub/Sub BINARY": {publish(t, evo, bin, map[string]string{ // Pub/Sub sets these on a topic with a schema; pstest does not
			formats.AttrSchemaName: created.Name, formats.AttrSchemaRevision: created.RevisionId, formats.AttrSchemaEncoding: formats.EncodingBinary}), "Pia", "c"},
		"Debezium JSON with schema":    {publish(t, evo, withSchema, nil), "Sarah", "c"},
		"Debezium JSON without schema": {publish(t, evo, read("customers-update.payload.json"), nil), "Sarah", "u"},
	}
	waitDelivered(t, base, len(ids))
	for format, w := range ids {
		rows := query(t, "SELECT first_name, _cdc_op, _cdc_schema_id, _cdc_sequence FROM `cdc."+catalog.TableName(evo)+"` WHERE _cdc_message_id = '"+w.id+"'")
		if len(rows) != 1 || rows[0]["first_name"] != w.first || rows[0]["_cdc_op"] != w.op || rows[0]["_cdc_sequence"] == nil || rows[0]["_cdc_schema_id"] != nil {
			dead := query(t, "SELECT stage, reason FROM `cdc._bqcdc_dead_letters` WHERE message_id = '"+w.id+"'")
			t.Errorf("%s: changelog rows %v (want %s %s), dead letters %v", format, rows, w.first, w.op, dead)
		}
	}
}
