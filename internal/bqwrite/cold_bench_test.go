package bqwrite_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqquota"
	"github.com/bqcdc/bqcdc/internal/dev/benchsize"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/schema"
	"google.golang.org/api/option"
)

var (
	coldTables = flag.Int("ingest.tables", 10000, "tables of BenchmarkColdInstance10000Tables")
	coldCols   = flag.Int("ingest.columns", 20, "columns of each table in BenchmarkColdInstance10000Tables (bqcdc's 8 metadata columns included)")
	coldShapes = flag.Int("ingest.schemas", 0, "distinct table schemas in BenchmarkColdInstance10000Tables (0: every table its own)")
	coldRTT    = flag.Duration("ingest.rtt", 50*time.Millisecond, "simulated round trip of every REST call in BenchmarkColdInstance10000Tables")
)

// BenchmarkColdInstance10000Tables is an ingest instance's first message of
// each of 10,000 tables of 20 columns (one row each, 64 at once, as concurrent push
// requests are): against the quota-aware fake with BigQuery's default
// limits, the REST client paced by bqquota.Transport and the Storage Write
// client multiplexed (clients.WriterOptions), as in production. It reports
// the REST requests the instance made (one tables.get a table: the schema
// and labels it appends with, cached after), quota-s, rejected, and what
// the instance holds afterwards: heap, goroutines and Storage Write
// connections. Tables of one schema share its encoder
// (-ingest.schemas: how many distinct schemas; by default each table has
// its own).
func BenchmarkColdInstance10000Tables(b *testing.B) {
	n := benchsize.Pick(*coldTables, 100, "ingest.tables")
	limits := bqquota.Default
	fake := fakebq.Start(b, fakebq.Options{Quota: &limits, RTT: benchsize.Pick(*coldRTT, 5*time.Millisecond, "ingest.rtt")})
	cols := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "v", Type: schema.String}}
	for i := len(cols); i < *coldCols; i++ {
		cols = append(cols, schema.Column{Name: fmt.Sprintf("c%02d", i), Type: []string{schema.String, schema.Int64, schema.Timestamp, schema.Float64}[i%4]})
	}
	shapes := *coldShapes
	if shapes <= 0 {
		shapes = n
	}
	for i := range n {
		// The last column's name makes the table's schema one of shapes.
		own := append(schema.Columns(nil), cols...)
		own[len(own)-1].Name = fmt.Sprintf("c_%05d", i%shapes)
		if err := fake.AddTable("d", fmt.Sprintf("t%05d", i), fakebq.Table{Columns: own}); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	cfg := fake.ClientConfig()
	for range b.N {
		bq, err := bigquery.NewClient(ctx, cfg.Project, option.WithEndpoint(cfg.Endpoint),
			option.WithHTTPClient(&http.Client{Transport: bqquota.NewTransport(http.DefaultTransport)}))
		if err != nil {
			b.Fatal(err)
		}
		w := multiplexedWriter(b, fake, bq)
		fake.ResetRequests()
		connections := fake.Connections()
		heap0, g0 := usage()
		start := time.Now()
		var wg sync.WaitGroup
		next := make(chan int)
		for range 64 {
			wg.Go(func() {
				for i := range next {
					if err := w.Append(ctx, fmt.Sprintf("t%05d", i), []map[string]any{{"id": int64(i), "v": "x"}}); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
		took := time.Since(start)
		heap1, g1 := usage()
		var requests, rejected int64
		for _, c := range fake.Requests() {
			requests += c
		}
		for _, c := range fake.Rejected() {
			rejected += c
		}
		b.ReportMetric(took.Seconds(), "wall-s")
		b.ReportMetric(float64(requests), "requests")
		b.ReportMetric(float64(rejected), "rejected")
		b.ReportMetric(fake.QuotaSeconds(limits), "quota-s")
		b.ReportMetric(float64(heap1-heap0)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(g1-g0), "goroutines")
		b.ReportMetric(float64(fake.Connections()-connections), "connections")
		b.Logf("requests by method: %v", fake.Requests())
		w.Close()
		bq.Close()
	}
}
