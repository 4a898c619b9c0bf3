// Package realbq is the opt-in live suite: bqcdc against real BigQuery. Set
// BQCDC_TEST_PROJECT to a Google Cloud project where Application Default
// Credentials may create and delete datasets and run jobs (BigQuery Data
// Owner, Job User, and Resource Viewer to list the run's jobs), and
// optionally BQCDC_TEST_LOCATION (default US); BQCDC_TEST_KEEP=1 keeps each
// test's dataset for inspection. Without BQCDC_TEST_PROJECT each test says
// why it does not run. It has never run: neither the development machines nor
// CI have cloud credentials. Cloud Build runs it when _TEST_PROJECT is set.
//
//	BQCDC_TEST_PROJECT=my-project go test ./internal/dev/e2e/realbq -v -timeout 30m
//
// TestPipelineOnBigQuery: the whole pipeline of the demo (apply with table
// functions, ingest through the Storage Write default stream, views against
// the model, compaction and idle detection, the table functions called,
// _bqcdc_status, job statistics), estimated at 3 to 6 minutes and under 10
// cents. TestSchemaEvolutionOnBigQuery: tables.update adding a column in
// place (the emulator needs the local stack's rebuild shim), the Storage
// Write API's default stream picking up the new schema (the emulator caches
// it per stream), and the retry of rows refused while it propagates (up to
// 15 minutes). Each test works in a dataset of its own and drops it.
package realbq

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/registryserver"
	"github.com/bqcdc/bqcdc/internal/ingest"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

const topic = "realbq.inventory.customers"

// TestMain says on every run why the suite does not run, not only with -v.
func TestMain(m *testing.M) {
	if os.Getenv("BQCDC_TEST_PROJECT") == "" {
		fmt.Println("realbq: not run: set BQCDC_TEST_PROJECT to a Google Cloud project to run the live suite against real BigQuery")
	}
	os.Exit(m.Run())
}

// live is a test's connection to real BigQuery and its own dataset.
type live struct {
	cfg     clients.Config
	bq      *bigquery.Client
	mw      *managedwriter.Client
	dataset string
}

// newLive skips the test without BQCDC_TEST_PROJECT; otherwise it connects
// and creates a dataset that is dropped, with everything in it, when the
// test ends.
func newLive(t *testing.T) *live {
	t.Helper()
	project := os.Getenv("BQCDC_TEST_PROJECT")
	if project == "" {
		t.Skip("BQCDC_TEST_PROJECT is not set: this opt-in test needs a Google Cloud project and credentials")
	}
	ctx := context.Background()
	cfg := clients.Config{Project: project, Location: os.Getenv("BQCDC_TEST_LOCATION")}
	if cfg.Location == "" {
		cfg.Location = "US"
	}
	bq, mw, err := clients.NewAppendClients(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lv := &live{cfg: cfg, bq: bq, mw: mw, dataset: fmt.Sprintf("bqcdc_test_%d", time.Now().UnixNano())}
	var rep apply.Report
	if err := apply.Dataset(ctx, bq, lv.dataset, &rep); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer bq.Close()
		defer mw.Close()
		if os.Getenv("BQCDC_TEST_KEEP") != "" {
			t.Logf("BQCDC_TEST_KEEP is set: dataset %s:%s is kept for inspection; drop it with `bq rm -r -f -d %s:%s`", project, lv.dataset, project, lv.dataset)
			return
		}
		if err := bq.Dataset(lv.dataset).DeleteWithContents(context.Background()); err != nil {
			t.Errorf("dropping dataset %s: %v (drop it by hand)", lv.dataset, err)
		}
	})
	return lv
}

// repoPath is a path of the repository, from this package's folder.
func repoPath(p string) string { return filepath.Join("..", "..", "..", "..", p) }

func version(t *testing.T, base string, added bool) string {
	t.Helper()
	out, err := cdc.EditImage([]byte(base), func(f []any) []any {
		if added {
			f = append(f, map[string]any{"name": "loyalty", "type": []any{"null", "long"}, "default": nil})
		}
		return f
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func message(t *testing.T, text string, id, customer int, loyalty any) []byte {
	t.Helper()
	s, err := registry.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]any{"id": customer, "first_name": "Ann", "last_name": "Lee", "email": "a@x", "tier": nil, "balance": nil, "birth_date": nil, "updated_at": nil}
	if loyalty != nil {
		row["loyalty"] = loyalty
	}
	rec := map[string]any{"op": "c", "ts_ms": nil, "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil,
		"after": map[string]any{"dbserver1.inventory.customers.Value": row},
		"source": map[string]any{"version": "2", "connector": "mysql", "name": "db", "ts_ms": int64(1000), "snapshot": "false", "db": "inventory",
			"sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1), "gtid": nil, "file": "mysql-bin.000001",
			"pos": int64(100 + customer), "row": 0, "thread": nil, "query": nil}}
	b, err := avro.Config{}.Freeze().Marshal(s, rec)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Append(nil, int32(id), b)
}

func TestSchemaEvolutionOnBigQuery(t *testing.T) {
	lv := newLive(t)
	ctx := context.Background()
	bq, project, dataset := lv.bq, lv.cfg.Project, lv.dataset
	var rep apply.Report
	reg := registryserver.New()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	base, err := os.ReadFile(repoPath("schemas/dbserver1.inventory.customers-value.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := version(t, string(base), false), version(t, string(base), true)
	id1, _ := reg.Register(catalog.Subject(topic), v1)
	id2, _ := reg.Register(catalog.Subject(topic), v2)
	cols, err := apply.ChangelogColumns(v1)
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.Changelog(ctx, bq, dataset, apply.SourceSchema{Source: topic, Columns: cols, SchemaID: id1, Origin: "test"}, []string{"id"}, &rep); err != nil {
		t.Fatal(err)
	}
	w := bqwrite.NewWriter(bq, lv.mw, project, dataset)
	defer w.Close()
	svc := ingest.New(ingest.Options{Registry: registry.New(srv.URL, registry.Options{}), Writer: w, Log: slog.Default()})

	// Handle until acknowledged, as Pub/Sub would redeliver: rows using the
	// new column may be refused while the schema propagates.
	deliver := func(id string, data []byte) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Minute)
		for {
			out, err := svc.Handle(ctx, ingest.Message{Topic: topic, MessageID: id, PublishTime: time.Now(), Data: data})
			if err == nil {
				if out != ingest.Appended {
					t.Fatalf("message %s: %v", id, out)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %s still failing after 15 minutes: %v", id, err)
			}
			t.Logf("message %s: %v (retrying in 10 s)", id, err)
			time.Sleep(10 * time.Second)
		}
	}
	deliver("m1", message(t, v1, id1, 1, nil))
	deliver("m2", message(t, v2, id2, 2, map[string]any{"long": int64(42)}))
	deliver("m3", message(t, v1, id1, 3, nil))

	it, err := bq.Query(fmt.Sprintf("SELECT _cdc_message_id AS m, loyalty FROM `%s.%s` ORDER BY m", dataset, catalog.TableName(topic))).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := clients.Collect(it)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(rows)
	if want := "[map[loyalty:<nil> m:m1] map[loyalty:42 m:m2] map[loyalty:<nil> m:m3]]"; got != want {
		t.Errorf("rows = %s, want %s", got, want)
	}
	md, err := bq.Dataset(dataset).Table(catalog.TableName(topic)).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var loyalty *bigquery.FieldSchema
	for _, f := range md.Schema {
		if f.Name == "loyalty" {
			loyalty = f
		}
	}
	if loyalty == nil || loyalty.Required {
		t.Errorf("loyalty column = %+v, want NULLABLE", loyalty)
	}
}
