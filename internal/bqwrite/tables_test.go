package bqwrite_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/schema"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestThousandTablesMultiplexed appends to 1,000 tables of three different
// schemas through one writer with the options bqcdc uses against Google
// (clients.WriterOptions: connection multiplexing), and checks every row
// lands in its table with its own schema.
func TestThousandTablesMultiplexed(t *testing.T) {
	const n = 1000
	fake := fakebq.Start(t, fakebq.Options{KeepRows: true})
	col := func(i int) string { return fmt.Sprintf("v%d", i%3) }
	for i := range n {
		cols := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: col(i), Type: schema.String}}
		if err := fake.AddTable("d", fmt.Sprintf("t%04d", i), fakebq.Table{Columns: cols}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	bq, err := clients.NewBigQuery(ctx, fake.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	w := multiplexedWriter(t, fake, bq)
	defer w.Close()
	heap0, g0 := usage()
	for i := range n {
		if err := w.Append(ctx, fmt.Sprintf("t%04d", i), []map[string]any{{"id": int64(i), col(i): "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	heap1, g1 := usage()
	t.Logf("multiplexed: 1,000 tables: heap +%.1f MiB, goroutines +%d, %d Storage Write connections",
		float64(heap1-heap0)/(1<<20), g1-g0, fake.Connections())
	for i := range n {
		rows := fake.Rows("d", fmt.Sprintf("t%04d", i))
		if len(rows) != 1 {
			t.Fatalf("table t%04d has %d rows, want 1", i, len(rows))
		}
		m, err := rows[0].Decode()
		if err != nil {
			t.Fatal(err)
		}
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(col(i)))
		if fd == nil || m.Get(fd).String() != "x" || m.Get(m.Descriptor().Fields().ByName("id")).Int() != int64(i) {
			t.Fatalf("table t%04d holds %v", i, m)
		}
	}
	if c := fake.Connections(); c > 8 {
		t.Errorf("%d connections for 1,000 multiplexed tables, want a few", c)
	}
}

// TestThousandTables appends to 1,000 tables through one writer without
// multiplexing (as against the emulator), as an ingest instance that has
// seen every table of a large deployment, and reports what that costs
// (heap, goroutines, connections); then checks that idle streams are
// closed, so what an instance holds follows the tables that are busy, not
// every table it ever saw.
func TestThousandTables(t *testing.T) {
	const n = 1000
	fake := fakebq.Start(t, fakebq.Options{})
	cols := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "v", Type: schema.String}}
	for i := range n {
		if err := fake.AddTable("d", fmt.Sprintf("t%04d", i), fakebq.Table{Columns: cols}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	cfg := fake.ClientConfig()
	bq, mw, err := clients.NewAppendClients(ctx, cfg) // an endpoint: the writer is not multiplexed
	if err != nil {
		t.Fatal(err)
	}
	w := bqwrite.NewWriter(bq, mw, cfg.Project, "d")
	defer w.Close()
	w.IdleClose = 0 // measure first, sweep below

	heap0, g0 := usage()
	start := time.Now()
	for i := range n {
		if err := w.Append(ctx, fmt.Sprintf("t%04d", i), []map[string]any{{"id": int64(i), "v": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	heap1, g1 := usage()
	t.Logf("1,000 tables opened and appended to in %v: heap +%.1f MiB (%.1f KiB a table), goroutines +%d (%.1f a table), %d Storage Write connections",
		took.Round(time.Millisecond), float64(heap1-heap0)/(1<<20), float64(heap1-heap0)/1024/n, g1-g0, float64(g1-g0)/n, fake.Connections())
	if w.OpenTables() != n {
		t.Fatalf("%d tables open, want %d", w.OpenTables(), n)
	}

	// Every table idle: the next lookup closes them all (after the grace).
	w.IdleClose, w.CloseGrace = time.Millisecond, 0
	time.Sleep(5 * time.Millisecond)
	if _, err := w.Table(ctx, "t0000"); err != nil {
		t.Fatal(err)
	}
	if got := w.OpenTables(); got != 1 {
		t.Errorf("%d tables open after the idle sweep, want 1 (the one just used)", got)
	}
	// managedwriter cancels a closed connection's context 20 s later
	// (gracefulReconnectDuration) from a goroutine of its own; those are
	// counted apart, as they end by themselves.
	deadline := time.Now().Add(10 * time.Second)
	var g2, lingering int
	for time.Now().Before(deadline) {
		_, g2 = usage()
		lingering = goroutinesIn("managedwriter.(*connection).getStream.func1")
		if g2-lingering < g0+(g1-g0)/10 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("after closing idle streams: goroutines +%d, of which %d are managedwriter's delayed cancellations (they end within 20 s)", g2-g0, lingering)
	if g2-lingering >= g0+(g1-g0)/10 {
		t.Errorf("goroutines still +%d after closing 999 idle streams (were +%d)", g2-lingering-g0, g1-g0)
	}
	// A closed table opens again on demand.
	if err := w.Append(ctx, "t0500", []map[string]any{{"id": int64(1), "v": "again"}}); err != nil {
		t.Fatal(err)
	}
}

// goroutinesIn counts the goroutines whose innermost frame of this package's
// callers is fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<24)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), fn+"(")
}

func usage() (heap uint64, goroutines int) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}

// multiplexedWriter is a writer to dataset d of the fake with the Storage
// Write options bqcdc uses against Google (clients.WriterOptions:
// connection multiplexing), its REST calls made with bq.
func multiplexedWriter(tb testing.TB, fake *fakebq.Server, bq *bigquery.Client) *bqwrite.Writer {
	tb.Helper()
	cfg := fake.ClientConfig()
	conn, err := grpc.NewClient(cfg.StorageEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	mw, err := managedwriter.NewClient(context.Background(), cfg.Project, append(clients.WriterOptions(), option.WithGRPCConn(conn), option.WithoutAuthentication())...)
	if err != nil {
		tb.Fatal(err)
	}
	return bqwrite.NewWriter(bq, mw, cfg.Project, "d")
}
