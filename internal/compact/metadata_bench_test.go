package compact

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqquota"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/benchsize"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

var (
	metaSources     = flag.Int("compact.sources", 5000, "sources of BenchmarkCompactMetadata10000Flows (two flows each)")
	metaRTT         = flag.Duration("compact.rtt", 100*time.Millisecond, "simulated round trip of every REST call in BenchmarkCompactMetadata10000Flows")
	metaChanged     = flag.Float64("compact.changed", 0.01, "share of the sources appended to since the last run")
	metaConcurrency = flag.Int("compact.concurrency", 8, "the compactor's Concurrency (Terraform's compact.flow_concurrency)")
)

// BenchmarkCompactMetadata10000Flows measures a compaction run's metadata
// phase (everything before its first query about a flow: Prepare's
// listing, ledger query and binding, then the state tables of the flows it
// runs) over 10,000 flows on 5,000 sources, of which 1 % were appended to
// since the last run, against the quota-aware fake (BigQuery's default
// limits, a simulated round trip, the client paced by bqquota.Transport).
// "ledger" is the append ledger's way; "tables.get" is without it (every
// changelog and state table read, as before the ledger). Each reports
// requests, quota-s (seconds of per-method quota, summed over methods),
// quota-floor-s (the most of one method), flows-run (those left for
// queries) and wall-s.
func BenchmarkCompactMetadata10000Flows(b *testing.B) {
	limits := bqquota.Default
	srv := fakebq.Start(b, fakebq.Options{Quota: &limits})
	bq, lister := srv.PacedClients(b)
	loc := catalog.Location{Project: srv.Project(), DefaultDataset: "cdc"}
	flows, appended := metadataDeployment(b, srv, benchsize.Pick(*metaSources, 100, "compact.sources"), *metaChanged)
	srv.AnswerQueries(func(sql string) (bigquery.Schema, [][]string, bool) {
		if !strings.Contains(sql, "-- bqcdc append ledger") {
			return nil, nil, false
		}
		until := strconv.FormatInt(time.Now().Add(5*time.Minute).UnixMicro(), 10)
		rows := make([][]string, len(appended))
		for i, src := range appended {
			rows[i] = []string{src, until}
		}
		return bigquery.Schema{{Name: "source", Type: bigquery.StringFieldType}, {Name: "until", Type: bigquery.TimestampFieldType}}, rows, true
	})
	srv.SetRTT(benchsize.Pick(*metaRTT, 10*time.Millisecond, "compact.rtt"))
	for _, mode := range []string{"ledger", "tables.get"} {
		b.Run(mode, func(b *testing.B) {
			c := New(bq, loc, Options{Ledger: mode == "ledger", Lister: lister, LedgerSettle: time.Nanosecond,
				Concurrency: *metaConcurrency, VisibilityLag: time.Minute})
			for range b.N {
				srv.ResetRequests()
				start := time.Now()
				sel, refused, err := c.Prepare(context.Background(), flows, nil, 0, 1)
				if err != nil || refused != nil {
					b.Fatal(err, refused)
				}
				tasks, _, err := c.metadata(context.Background(), sel)
				if err != nil {
					b.Fatal(err)
				}
				for _, t := range tasks {
					if t.err != nil {
						b.Fatal(t.err)
					}
				}
				b.ReportMetric(time.Since(start).Seconds(), "wall-s")
				b.ReportMetric(float64(len(tasks)), "flows-run")
				b.ReportMetric(float64(len(sel.Idle)), "flows-idle")
				var requests int64
				for _, n := range srv.Requests() {
					requests += n
				}
				b.ReportMetric(float64(requests), "requests")
				b.ReportMetric(srv.QuotaSeconds(limits), "quota-s")
				b.ReportMetric(srv.QuotaFloor(limits), "quota-floor-s")
				b.Logf("requests by method: %v; rejected: %v", srv.Requests(), srv.Rejected())
			}
		})
	}
}

// metadataDeployment registers on srv what 2×sources flows look like after
// runs that left them clean: changelogs, state tables labelled clean with
// their reached marks, and the append ledger; it returns the flows and the
// share changed of the sources (those the ledger names).
func metadataDeployment(b *testing.B, srv *fakebq.Server, sources int, changed float64) ([]*flow.Flow, []string) {
	b.Helper()
	cols := append(schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "tenant_id", Type: schema.String}, {Name: "name", Type: schema.String},
		{Name: "updated_at", Type: schema.Timestamp}}, catalog.MetadataColumns()...)
	if err := srv.AddTable("cdc", catalog.AppendsTable, fakebq.Table{Columns: catalog.AppendsColumns()}); err != nil {
		b.Fatal(err)
	}
	now := time.Now().Add(time.Millisecond) // after the ledger was made
	var src strings.Builder
	for i := range sources {
		fmt.Fprintf(&src, "CREATE FLOW t%05[1]d_current AS AUTO CDC INTO t%05[1]d_current FROM STREAM(`db.shop.table_%05[1]d`) KEYS (id) APPLY AS DELETE WHEN _cdc_op = 'd' SEQUENCE BY _cdc_sequence STORED AS SCD TYPE 1;\n", i)
		fmt.Fprintf(&src, "CREATE FLOW t%05[1]d_history AS AUTO CDC INTO history.t%05[1]d FROM STREAM(`db.shop.table_%05[1]d`) KEYS (tenant_id, id) APPLY AS DELETE WHEN _cdc_op = 'd' SEQUENCE BY _cdc_sequence STORED AS SCD TYPE 2;\n", i)
	}
	flows, err := flow.Parse("flows.sql", src.String())
	if err != nil {
		b.Fatal(err)
	}
	us := func(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }
	labels := map[string]string{catalog.StateLayoutLabel: catalog.StateLayout, catalog.LabelWatermark: us(now.Add(-time.Minute)),
		catalog.LabelFoldedMax: us(now.Add(-time.Minute)), catalog.LabelSignature: "0", catalog.LabelSigSeen: us(now.Add(-time.Hour)),
		catalog.LabelChecked: us(now), catalog.LabelClean: "1", catalog.LabelReached: us(now)}
	var appended []string
	every := int(1 / changed)
	for i, f := range flows {
		if i%2 == 0 {
			if err := srv.AddTable("cdc", catalog.TableName(f.Source.Name), fakebq.Table{Columns: cols}); err != nil {
				b.Fatal(err)
			}
			if every > 0 && (i/2)%every == 0 {
				appended = append(appended, f.Source.Name)
			}
		}
		bound, err := flow.Bind(f, cols)
		if err != nil {
			b.Fatal(err)
		}
		ds := f.Target.Dataset
		if ds == "" {
			ds = "cdc"
		}
		if err := srv.AddTable(ds, catalog.StateName(f), fakebq.Table{Schema: bqschema.ToBigQuery(plan.For(bound, catalog.Location{}).StateColumns()), Labels: labels}); err != nil {
			b.Fatal(err)
		}
	}
	return flows, appended
}
