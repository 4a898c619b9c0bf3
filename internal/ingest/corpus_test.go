package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

const hostileDir = "testdata/hostile"

// hostileManifest is testdata/hostile/manifest.json (written by package
// formats' TestHostileCorpus -update-hostile).
type hostileManifest struct {
	Cases []struct {
		File, Class, Format string
		Attributes          map[string]string
		SchemaID            int    `json:"schema_id"`
		Schema              string `json:"schema"`
		Expect              struct {
			Outcome, Stage, Reason string
			Columns                map[string]string
		}
	}
}

// TestHostileCorpusThroughTheService runs every file of the hostile-input
// corpus through the ingest service and checks each ends as the manifest says: a dead letter at
// its stage with its reason (and its bytes), an appended row whose
// changelog has the columns listed, or a tombstone. The service must go on
// serving: a well-formed message is appended after every case.
func TestHostileCorpusThroughTheService(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(hostileDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m hostileManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	{
		for _, c := range m.Cases {
			if c.Format == "pubsub-binary" {
				// Needs Pub/Sub's schema service; package formats decodes
				// this file with the revision's schema and checks its stage.
				t.Logf("%s: checked in package formats (no Pub/Sub schema service here)", c.File)
				continue
			}
			t.Run(c.File, func(t *testing.T) {
				reg := &fakeRegistry{schemas: map[int]avro.Schema{}}
				if c.Schema != "" {
					text, err := os.ReadFile(filepath.Join(hostileDir, c.Schema))
					if err != nil {
						t.Fatal(err)
					}
					s, err := registry.Parse(string(text))
					if err != nil {
						t.Fatal(err)
					}
					reg.schemas[c.SchemaID] = s
				}
				svc, tables, cs := newServiceWith(t, reg, Options{})
				if c.SchemaID != 1 {
					reg.schemas[1] = cs // for the well-formed message after the case
				}
				const topic = "hostile.src"
				addEmptyChangelog(t, tables, topic)
				data, err := os.ReadFile(filepath.Join(hostileDir, c.File))
				if err != nil {
					t.Fatal(err)
				}
				got, err := svc.Handle(context.Background(), Message{Topic: topic, MessageID: "h", Attributes: c.Attributes, Data: data})
				if err != nil {
					t.Fatalf("Handle: %v (a hostile message must never be retried)", err)
				}
				dl := tables.rows[catalog.DeadLetterTable]
				switch c.Expect.Outcome {
				case "dead_letter":
					if got != DeadLettered || len(dl) != 1 {
						t.Fatalf("outcome %v, %d dead letters; want one dead letter (%s)", got, len(dl), c.Class)
					}
					if dl[0]["stage"] != c.Expect.Stage || !strings.Contains(dl[0]["reason"].(string), c.Expect.Reason) {
						t.Errorf("dead letter at stage %v: %v; want stage %s, reason containing %q", dl[0]["stage"], dl[0]["reason"], c.Expect.Stage, c.Expect.Reason)
					}
					if string(dl[0]["data"].([]byte)) != string(data) {
						t.Error("the dead letter does not keep the message's bytes")
					}
				case "appended":
					if got != Appended || len(dl) != 0 {
						t.Fatalf("outcome %v, dead letters %v; want appended (%s)", got, dl, c.Class)
					}
					have := bqschema.FromBigQuery(tables.tables[catalog.TableName(topic)].Metadata.Schema)
					for col, typ := range c.Expect.Columns {
						hc, ok := have.Lookup(col)
						if !ok || !strings.HasPrefix(typ, hc.Type) {
							t.Errorf("changelog column %s: %+v (found %v), want %s", col, hc, ok, typ)
						}
					}
				case "tombstone":
					if got != Tombstone {
						t.Fatalf("outcome %v, want a tombstone", got)
					}
				default:
					t.Fatalf("manifest: unknown outcome %q", c.Expect.Outcome)
				}
				// The instance keeps serving.
				if got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "ok", Data: customerMessage(t, cs, "c", 1)}); got != Appended || err != nil {
					t.Errorf("next message: %v, %v", got, err)
				}
			})
		}
	}
}

// addEmptyChangelog gives topic a changelog of bqcdc's metadata columns
// only: a writer's columns arrive through schema evolution.
func addEmptyChangelog(t testing.TB, f *fakeTables, topic string) {
	t.Helper()
	s := bqschema.ToBigQuery(catalog.MetadataColumns())
	enc, err := bqwrite.NewEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	name := catalog.TableName(topic)
	f.tables[name] = &bqwrite.Table{Name: name, Metadata: &bigquery.TableMetadata{Schema: s}, Encoder: enc}
}

// TestEveryOpEnds checks how each op of the customers schema ends: c, u,
// r and t appended, a delete without its before image and an unknown op
// dead-lettered (package transcode checks the rows against the reference
// pipeline).
func TestEveryOpEnds(t *testing.T) {
	svc, tables, s := newServiceWith(t, nil, Options{})
	var got []Outcome
	for i, op := range []string{"c", "u", "r", "d", "t", "x"} {
		o, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: fmt.Sprint("m", i), Data: customerMessage(t, s, op, i+1)})
		if err != nil {
			t.Fatalf("op %s: %v", op, err)
		}
		got = append(got, o)
	}
	want := []Outcome{Appended, Appended, Appended, DeadLettered, Appended, DeadLettered}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("outcomes (-want +got):\n%s", d)
	}
	if n := len(tables.rows[catalog.TableName(customers)]); n != 4 {
		t.Errorf("%d rows, want 4", n)
	}
	for _, dl := range tables.rows[catalog.DeadLetterTable] {
		if dl["stage"] != "envelope" {
			t.Errorf("dead letter at %v: %v; want stage envelope", dl["stage"], dl["reason"])
		}
	}
}
