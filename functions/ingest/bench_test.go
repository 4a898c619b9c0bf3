package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/dev/registryserver"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

// appendLatency is the fake Storage Write API's round trip. 5 ms is about
// what an AppendRows acknowledgement takes from Cloud Run to BigQuery in
// the same region (a few milliseconds of network plus the server's
// commit); with 0 the benchmark measures CPU only, and batching has nothing
// to amortise.
var appendLatency = flag.Duration("append-latency", 5*time.Millisecond,
	"BenchmarkFunction: latency the fake Storage Write API adds to every append's response")

const (
	benchTopic   = "dbserver1.inventory.customers"
	benchDataset = "cdc"
)

// BenchmarkFunction drives the real Ingest function over HTTP, with Pub/Sub
// push bodies, against an in-process Storage Write API that only
// acknowledges (fakebq, with -append-latency of round trip) and an
// in-memory schema registry. N goroutines post distinct messages until b.N
// are done. Reported: msgs/s, appends/msg (AppendRows requests the fake
// received per message), p99-ms (per-request latency seen by the poster)
// and allocations (of the whole process: poster and fakes included).
//
//	go test ./functions/ingest -run '^$' -bench Function -benchtime 2000x [-args -append-latency=10ms]
func BenchmarkFunction(b *testing.B) {
	for _, n := range []int{1, 16, 80, 250} {
		b.Run("concurrency="+strconv.Itoa(n), func(b *testing.B) { benchFunction(b, n) })
	}
}

func benchFunction(b *testing.B, concurrency int) {
	env := newBenchEnv(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: concurrency, MaxIdleConnsPerHost: concurrency}}
	defer client.CloseIdleConnections()
	url := env.http.URL + "/projects/p/topics/" + benchTopic

	// The first message opens the table's stream and caches its schema and
	// the writer schema, which an instance does once; keep it out of the
	// figures.
	if err := post(client, url, env.body(b, -1)); err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = env.body(b, i)
	}
	latencies := make([]time.Duration, b.N)
	before := env.fake.TotalStats()
	var (
		next    atomic.Int64
		failed  atomic.Pointer[error]
		workers sync.WaitGroup
	)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for failed.Load() == nil {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				t0 := time.Now()
				if err := post(client, url, bodies[i]); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				latencies[i] = time.Since(t0)
			}
		}()
	}
	workers.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	after := env.fake.TotalStats()
	// A 204 also acknowledges a dead-lettered message: check that every one
	// became a changelog row.
	if dl := env.fake.Stats(benchDataset, catalog.DeadLetterTable).Stored; dl != 0 {
		b.Fatalf("%d messages were dead-lettered", dl)
	}
	if got := env.fake.Stats(benchDataset, catalog.TableName(benchTopic)).Stored; got != int64(b.N)+1 {
		b.Fatalf("%d changelog rows written for %d messages", got, b.N+1)
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(after.Appends-before.Appends)/float64(b.N), "appends/msg")
	b.ReportMetric(float64(latencies[(len(latencies)*99+99)/100-1])/float64(time.Millisecond), "p99-ms")
}

// benchEnv is an Ingest function on an httptest server, with its
// BigQuery (fakebq) and registry.
type benchEnv struct {
	fake     *fakebq.Server
	http     *httptest.Server
	schema   avro.Schema
	schemaID int
	cfg      config.Config
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	text, err := os.ReadFile("../../schemas/dbserver1.inventory.customers-value.avsc")
	if err != nil {
		b.Fatal(err)
	}
	reg := registryserver.New()
	id, err := reg.Register(catalog.Subject(benchTopic), string(text))
	if err != nil {
		b.Fatal(err)
	}
	regHTTP := httptest.NewServer(reg)
	b.Cleanup(regHTTP.Close)
	s, err := registry.Parse(string(text))
	if err != nil {
		b.Fatal(err)
	}

	fake := fakebq.Start(b, fakebq.Options{Latency: *appendLatency})
	// The tables `bqcdc apply` would create for the topic.
	cols, err := apply.ChangelogColumns(string(text))
	if err != nil {
		b.Fatal(err)
	}
	labels := map[string]string{catalog.SourceLabel: catalog.LabelValue(benchTopic), catalog.ReaderSchemaLabel: strconv.Itoa(id)}
	if err := fake.AddTable(benchDataset, catalog.TableName(benchTopic), fakebq.Table{Columns: cols, Labels: labels}); err != nil {
		b.Fatal(err)
	}
	if err := fake.AddTable(benchDataset, catalog.DeadLetterTable, fakebq.Table{Columns: catalog.DeadLetterColumns()}); err != nil {
		b.Fatal(err)
	}

	cfg := config.Config{
		BigQuery:    fake.ClientConfig(),
		Dataset:     benchDataset,
		RegistryURL: regHTTP.URL,
		// Never dialled (the messages are Confluent-framed); set so that the
		// Pub/Sub schema client is built without looking for Google
		// credentials.
		PubSubEndpoint: "127.0.0.1:1",
	}
	fn, err := New(context.Background(), cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(fn)
	b.Cleanup(srv.Close)
	return &benchEnv{fake: fake, http: srv, schema: s, schemaID: id, cfg: cfg}
}

// BenchmarkColdStart is what a new instance pays before its first message
// is acknowledged: New (clients, pipeline) and the first message, which
// reads the table's metadata, opens its stream, fetches the writer schema
// and compiles the codec (against fakebq with -append-latency and the
// in-memory registry; process start and the Go runtime are not counted).
//
//	go test ./functions/ingest -run '^$' -bench ColdStart -benchtime 20x
func BenchmarkColdStart(b *testing.B) {
	env := newBenchEnv(b)
	body := env.body(b, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fn, err := New(context.Background(), env.cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		rec := httptest.NewRecorder()
		fn.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/projects/p/topics/"+benchTopic, bytes.NewReader(body)))
		if rec.Code/100 != 2 {
			b.Fatalf("first message answered %d: %s", rec.Code, rec.Body)
		}
	}
}

// body is the push body of message i: a Debezium insert of customer i,
// Confluent-framed, with its own message id and binlog position.
func (e *benchEnv) body(b *testing.B, i int) []byte {
	b.Helper()
	row := map[string]any{"id": i, "first_name": "Ann", "last_name": "Lee", "email": "ann@example.com", "tier": nil, "balance": nil, "birth_date": nil, "updated_at": nil}
	rec := map[string]any{"op": "c", "ts_ms": nil, "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil,
		"after": map[string]any{benchTopic + ".Value": row},
		"source": map[string]any{"version": "2", "connector": "mysql", "name": "dbserver1", "ts_ms": int64(1_700_000_000_000), "snapshot": "false", "db": "inventory",
			"sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1), "gtid": nil, "file": "mysql-bin.000001",
			"pos": int64(1000 + i), "row": 0, "thread": nil, "query": nil}}
	payload, err := avro.Marshal(e.schema, rec)
	if err != nil {
		b.Fatal(err)
	}
	var push PushBody
	push.Message.Data = wire.Append(nil, int32(e.schemaID), payload)
	push.Message.MessageID = fmt.Sprintf("bench-%d", i)
	push.Message.PublishTime = time.Unix(1_700_000_000, 0).UTC()
	push.Subscription = "projects/p/subscriptions/" + benchTopic
	out, err := json.Marshal(push)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// post posts one push body and wants a 2xx answer.
func post(client *http.Client, url string, body []byte) error {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push answered %s: %s", resp.Status, msg)
	}
	return nil
}
