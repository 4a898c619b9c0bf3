package apply

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/bqquota"
	"github.com/bqcdc/bqcdc/internal/dev/benchsize"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/sql/render"
)

var (
	quotaSources = flag.Int("apply.sources", 5000, "sources of BenchmarkApply10000Flows (two flows each)")
	quotaRTT     = flag.Duration("apply.quota-rtt", 100*time.Millisecond, "simulated round trip of every REST call in BenchmarkApply10000Flows")
	quotaWorkers = flag.Int("apply.quota-concurrency", 64, "objects applied at once in BenchmarkApply10000Flows")
)

// BenchmarkApply10000Flows measures bqcdc apply of 10,000 flows over 5,000
// sources (35,000 tables and views, 20,000 table functions) against the
// quota-aware fake: BigQuery's default limits enforced (100 requests a
// second per method, 5 updates per 10 s per table; refusals are 403
// rateLimitExceeded, which the client backs off from), every REST call
// delayed by a round trip (-apply.quota-rtt), and the client paced by
// bqquota.Transport as `bqcdc apply` is. "first" creates everything,
// "second" applies the same flows again and changes nothing. Each reports
// requests, quota-s (the seconds of per-method quota they used, summed
// over methods), quota-floor-s (the most of one method: the least wall
// time the quota allows) and rejected; "second-reading-each" is a second
// apply without the listing (one tables.get per object), as before it. -apply.sources 500 gives the same
// figures at 1,000 flows. Under -short (CI's run of every benchmark): 100
// flows, a 10 ms round trip, and the status view reading the table of
// flows as it does past ~2,000 flows, so the short run takes the full
// size's paths.
func BenchmarkApply10000Flows(b *testing.B) {
	flows, schemas := scaleDeployment(b, benchsize.Pick(*quotaSources, 50, "apply.sources"))
	if testing.Short() {
		maxView := render.StatusMaxView
		render.StatusMaxView = 1
		b.Cleanup(func() { render.StatusMaxView = maxView })
	}
	target := testTarget
	limits := bqquota.Default
	srv := fakebq.Start(b, fakebq.Options{Quota: &limits, RTT: benchsize.Pick(*quotaRTT, 10*time.Millisecond, "apply.quota-rtt")})
	bq, lister := srv.PacedClients(b)
	apply := func(b *testing.B, lister Lister) {
		srv.ResetRequests()
		var rep Report
		start := time.Now()
		if _, err := AllWith(context.Background(), bq, target, flows, schemas, Options{Concurrency: *quotaWorkers, Lister: lister}, &rep); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "wall-s")
		report(b, srv, limits)
		b.ReportMetric(float64(len(rep)), "objects")
	}
	b.Run("first", func(b *testing.B) {
		for range b.N {
			apply(b, lister) // a second iteration would be a second apply: run with -benchtime 1x
		}
	})
	b.Run("second", func(b *testing.B) {
		for range b.N {
			apply(b, lister)
		}
	})
	// What a second apply cost before the listing: one read per object.
	b.Run("second-reading-each", func(b *testing.B) {
		for range b.N {
			apply(b, nil)
		}
	})
}

// report puts the fake's request counts of the last phase in the
// benchmark's metrics.
func report(b *testing.B, srv *fakebq.Server, l bqquota.Limits) {
	var requests, rejected int64
	for _, n := range srv.Requests() {
		requests += n
	}
	for _, n := range srv.Rejected() {
		rejected += n
	}
	b.ReportMetric(float64(requests), "requests")
	b.ReportMetric(float64(rejected), "rejected")
	b.ReportMetric(srv.QuotaSeconds(l), "quota-s")
	b.ReportMetric(srv.QuotaFloor(l), "quota-floor-s")
	b.Logf("requests by method: %v; rejected: %v", srv.Requests(), srv.Rejected())
}
