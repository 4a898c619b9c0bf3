package fakebq_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqquota"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

// quotaServer is a fake enforcing l (nil: nothing) with table d.t.
func quotaServer(t *testing.T, l *bqquota.Limits) *fakebq.Server {
	t.Helper()
	srv := fakebq.Start(t, fakebq.Options{Quota: l})
	if err := srv.AddTable("d", "t", fakebq.Table{Columns: columns}); err != nil {
		t.Fatal(err)
	}
	return srv
}

func tableURL(srv *fakebq.Server, table string) string {
	return srv.RESTURL() + "/projects/" + srv.Project() + "/datasets/d/tables/" + table
}

// do sends a raw request and returns the error the API client library
// would make of its answer (nil for a 2xx).
func do(t *testing.T, method, url, body string) error {
	t.Helper()
	var r *http.Request
	var err error
	if body == "" {
		r, err = http.NewRequest(method, url, nil)
	} else {
		r, err = http.NewRequest(method, url, strings.NewReader(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return googleapi.CheckResponse(resp)
}

// rateLimited checks that err is BigQuery's refusal for a quota, with a
// message containing msg.
func rateLimited(t *testing.T, err error, msg string) {
	t.Helper()
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) || gerr.Code != http.StatusForbidden || len(gerr.Errors) != 1 ||
		gerr.Errors[0].Reason != "rateLimitExceeded" || !strings.Contains(gerr.Message, msg) {
		t.Errorf("err = %v, want 403 rateLimitExceeded with %q", err, msg)
	}
}

func newClient(t *testing.T, srv *fakebq.Server, opts ...option.ClientOption) *bigquery.Client {
	t.Helper()
	opts = append([]option.ClientOption{option.WithEndpoint(srv.RESTURL()), option.WithoutAuthentication()}, opts...)
	bq, err := bigquery.NewClient(context.Background(), srv.Project(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bq.Close() })
	return bq
}

// A burst of one method is refused after PerMethod requests, with the
// error BigQuery answers; other methods have their own quota.
func TestMethodQuota(t *testing.T) {
	l := bqquota.Limits{PerMethod: 20, TableUpdates: 5, UpdateWindow: time.Second}
	srv := quotaServer(t, &l)
	start := time.Now()
	first := 0 // the first refused request, counting from 1
	var refusal error
	for i := 1; i <= 100 && first == 0; i++ {
		if err := do(t, http.MethodGet, tableURL(srv, "t"), ""); err != nil {
			first, refusal = i, err
		}
	}
	// A token comes back every 1/20 s; none has if the burst was quicker.
	elapsed := time.Since(start)
	if last := 21 + int(elapsed.Seconds()*l.PerMethod); first < 21 || first > last {
		t.Errorf("first refusal at request %d (in %v), want 21 (at most %d)", first, elapsed, last)
	}
	rateLimited(t, refusal, "Exceeded rate limits: too many api requests per user per method for this user_method (fakebq: tables.get)")
	if err := do(t, http.MethodGet, srv.RESTURL()+"/projects/"+srv.Project()+"/datasets/d", ""); err != nil {
		t.Errorf("datasets.get after tables.get's quota ran out: %v", err)
	}
	if n := srv.Rejected()[bqquota.TablesGet]; n != 1 {
		t.Errorf("Rejected()[tables.get] = %d, want 1", n)
	}
}

// The client library sees the refusal as a *googleapi.Error and retries it
// with backoff: against an exhausted quota a call is slow, and fails if
// its context ends first.
func TestMethodQuotaClient(t *testing.T) {
	srv := quotaServer(t, &bqquota.Limits{PerMethod: 1}) // one token a second
	bq := newClient(t, srv)
	ref := bq.Dataset("d").Table("t")
	if _, err := ref.Metadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := ref.Metadata(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline (the client retries rateLimitExceeded)", err)
	}
	rateLimited(t, err, "(fakebq: tables.get)")
	if n := srv.Rejected()[bqquota.TablesGet]; n < 1 {
		t.Errorf("Rejected()[tables.get] = %d, want at least 1", n)
	}
}

// Metadata updates of one table are limited per sliding window; a
// creation counts, reads do not, and other tables have their own.
func TestTableUpdateQuota(t *testing.T) {
	const window = 500 * time.Millisecond
	srv := quotaServer(t, &bqquota.Limits{PerMethod: 1000, TableUpdates: 3, UpdateWindow: window})
	bq := newClient(t, srv)
	ctx := context.Background()
	// tables.insert through the client: the fake reads the body for the
	// table's name and gives it back to the handler whole.
	if err := bq.Dataset("d").Table("n").Create(ctx, &bigquery.TableMetadata{Schema: testSchema}); err != nil {
		t.Fatal(err)
	}
	if md, err := bq.Dataset("d").Table("n").Metadata(ctx); err != nil || len(md.Schema) != len(testSchema) {
		t.Fatalf("created table: %+v, %v", md, err)
	}
	start := time.Now()
	patch := `{"description": "x"}`
	for i := range 2 {
		if err := do(t, http.MethodPatch, tableURL(srv, "n"), patch); err != nil {
			t.Fatalf("patch %d after the insert: %v", i+1, err)
		}
	}
	err := do(t, http.MethodPatch, tableURL(srv, "n"), patch)
	if time.Since(start) >= window {
		t.Skipf("three patches took more than the %v window", window)
	}
	rateLimited(t, err, "Exceeded rate limits: too many table update operations for this table (fakebq: projects/"+srv.Project()+"/datasets/d/tables/n)")
	if err := do(t, http.MethodGet, tableURL(srv, "n"), ""); err != nil {
		t.Errorf("tables.get of an updated table: %v", err)
	}
	if err := do(t, http.MethodPatch, tableURL(srv, "t"), patch); err != nil {
		t.Errorf("patch of another table: %v", err)
	}
	time.Sleep(window)
	if err := do(t, http.MethodPatch, tableURL(srv, "n"), patch); err != nil {
		t.Errorf("patch after the window: %v", err)
	}
	want := map[string]int64{bqquota.TablesInsert: 1, bqquota.TablesGet: 2, bqquota.TablesPatch: 4}
	if d := cmp.Diff(want, srv.Requests()); d != "" {
		t.Errorf("Requests (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]int64{bqquota.TablesPatch: 1}, srv.Rejected()); d != "" {
		t.Errorf("Rejected (-want +got):\n%s", d)
	}
}

// Requests are counted by method without a quota too, and turned into the
// quota they use.
func TestRequestCounts(t *testing.T) {
	srv := quotaServer(t, nil)
	for range 3 {
		if err := do(t, http.MethodGet, tableURL(srv, "t"), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := do(t, http.MethodPatch, tableURL(srv, "t"), `{"description": "x"}`); err != nil {
		t.Fatal(err)
	}
	if err := do(t, http.MethodGet, srv.RESTURL()+"/bigquery/v2/projects/"+srv.Project()+"/datasets/d", ""); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{bqquota.TablesGet: 3, bqquota.TablesPatch: 1, bqquota.DatasetsGet: 1}
	if d := cmp.Diff(want, srv.Requests()); d != "" {
		t.Errorf("Requests (-want +got):\n%s", d)
	}
	if r := srv.Rejected(); len(r) != 0 {
		t.Errorf("Rejected = %v without a quota", r)
	}
	l := bqquota.Limits{PerMethod: 10}
	if s, f := srv.QuotaSeconds(l), srv.QuotaFloor(l); s != 0.5 || f != 0.3 {
		t.Errorf("QuotaSeconds, QuotaFloor = %v, %v; want 0.5, 0.3", s, f)
	}
	if s := srv.QuotaSeconds(bqquota.Limits{}); s != 5/bqquota.Default.PerMethod {
		t.Errorf("QuotaSeconds(zero Limits) = %v, want Default's %v", s, 5/bqquota.Default.PerMethod)
	}
	srv.ResetRequests()
	if r := srv.Requests(); len(r) != 0 || srv.QuotaSeconds(l) != 0 {
		t.Errorf("after ResetRequests: %v", r)
	}

	// Refused requests are counted apart, and used quota too.
	l = bqquota.Limits{PerMethod: 2}
	srv = quotaServer(t, &l)
	for range 3 {
		_ = do(t, http.MethodGet, tableURL(srv, "t"), "")
	}
	if a, r := srv.Requests(), srv.Rejected(); a[bqquota.TablesGet] != 2 || r[bqquota.TablesGet] != 1 {
		t.Errorf("Requests %v, Rejected %v; want 2 and 1 tables.get", a, r)
	}
	if s, f := srv.QuotaSeconds(l), srv.QuotaFloor(l); s != 1.5 || f != 1.5 {
		t.Errorf("QuotaSeconds, QuotaFloor = %v, %v; want 1.5, 1.5", s, f)
	}
}

// A client paced by bqquota.Transport is never refused, however many
// requests it makes at once; without it, the same burst is.
func TestTransportNeverRefused(t *testing.T) {
	const requests, workers = 300, 16
	l := bqquota.Limits{PerMethod: 250} // Transport: 200 at once, then 200/s
	// burst makes n requests from workers at once, until stop.
	burst := func(t *testing.T, n int, get func() error, stop func() bool) {
		var wg sync.WaitGroup
		next := make(chan struct{})
		go func() {
			defer close(next)
			for range n {
				if stop() {
					return
				}
				next <- struct{}{}
			}
		}()
		for range workers {
			wg.Go(func() {
				for range next {
					if err := get(); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}

	srv := quotaServer(t, &l)
	paced := &bqquota.Transport{Limits: l, Share: 0.8}
	ref := newClient(t, srv, option.WithHTTPClient(&http.Client{Transport: paced})).Dataset("d").Table("t")
	burst(t, requests, func() error { _, err := ref.Metadata(context.Background()); return err }, func() bool { return false })
	if r := srv.Rejected(); len(r) != 0 {
		t.Errorf("Rejected = %v through bqquota.Transport", r)
	}
	if n := srv.Requests()[bqquota.TablesGet]; n != requests {
		t.Errorf("%d tables.get served, want %d", n, requests)
	}

	// Unpaced, the same clients are refused once the bucket is empty,
	// after 250 requests and what it refills meanwhile (more on a slow
	// machine: hence until the first refusal).
	srv = quotaServer(t, &l)
	burst(t, 20*requests, func() error {
		if err := do(t, http.MethodGet, tableURL(srv, "t"), ""); err != nil && !strings.Contains(err.Error(), "rateLimitExceeded") {
			return err
		}
		return nil
	}, func() bool { return srv.Rejected()[bqquota.TablesGet] > 0 })
	if n := srv.Rejected()[bqquota.TablesGet]; n == 0 {
		t.Errorf("an unpaced burst of %d was not refused", 20*requests)
	}
}

// RTT delays each response, concurrently.
func TestRTT(t *testing.T) {
	const rtt = 100 * time.Millisecond
	srv := fakebq.Start(t, fakebq.Options{RTT: rtt})
	if err := srv.AddTable("d", "t", fakebq.Table{Columns: columns}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			t0 := time.Now()
			if err := do(t, http.MethodGet, tableURL(srv, "t"), ""); err != nil {
				t.Error(err)
			}
			if d := time.Since(t0); d < rtt {
				t.Errorf("a response after %v, want at least %v", d, rtt)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d > 8*rtt { // one at a time would be 10 × rtt
		t.Errorf("10 concurrent requests took %v at %v each: served one at a time?", d, rtt)
	}
	srv.SetRTT(0)
	t0 := time.Now()
	if err := do(t, http.MethodGet, tableURL(srv, "t"), ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d >= rtt {
		t.Errorf("after SetRTT(0) a response took %v", d)
	}
}

// A script of CREATE statements is one job, each statement recorded.
func TestScriptJob(t *testing.T) {
	ctx := context.Background()
	srv := quotaServer(t, nil)
	bq := newClient(t, srv)
	run := func(sql string) (*bigquery.JobStatus, error) {
		job, err := bq.Query(sql).Run(ctx)
		if err != nil {
			return nil, err
		}
		return job.Wait(ctx)
	}
	const script = `-- the first
CREATE OR REPLACE TABLE FUNCTION d.f1(ts TIMESTAMP) AS
SELECT ts
;

-- the second
CREATE OR REPLACE TABLE FUNCTION d.f2() AS SELECT 2;

CREATE OR REPLACE TABLE FUNCTION d.f3() AS SELECT 3;
`
	st, err := run(script)
	if err != nil {
		t.Fatal(err)
	}
	if qs, ok := st.Statistics.Details.(*bigquery.QueryStatistics); !ok || qs.StatementType != "SCRIPT" {
		t.Errorf("statistics %+v, want statement type SCRIPT", st.Statistics.Details)
	}
	want := []string{
		"-- the first\nCREATE OR REPLACE TABLE FUNCTION d.f1(ts TIMESTAMP) AS\nSELECT ts",
		"-- the second\nCREATE OR REPLACE TABLE FUNCTION d.f2() AS SELECT 2",
		"CREATE OR REPLACE TABLE FUNCTION d.f3() AS SELECT 3",
	}
	if d := cmp.Diff(want, srv.DDL()); d != "" {
		t.Errorf("DDL (-want +got):\n%s", d)
	}
	if n := srv.Requests()[bqquota.JobsInsert]; n != 1 {
		t.Errorf("%d jobs.insert for a script, want 1", n)
	}

	// One statement is kept as written, semicolon and all.
	const one = "CREATE OR REPLACE TABLE FUNCTION d.f4() AS SELECT 4;"
	st, err = run(one)
	if err != nil {
		t.Fatal(err)
	}
	if qs, ok := st.Statistics.Details.(*bigquery.QueryStatistics); !ok || qs.StatementType != "CREATE_TABLE_FUNCTION" {
		t.Errorf("statistics %+v, want statement type CREATE_TABLE_FUNCTION", st.Statistics.Details)
	}
	if d := cmp.Diff(append(want, one), srv.DDL()); d != "" {
		t.Errorf("DDL (-want +got):\n%s", d)
	}

	// A SELECT in a script refuses all of it.
	if _, err := run("CREATE OR REPLACE TABLE FUNCTION d.f5() AS SELECT 5;\n\nSELECT 1;\n"); err == nil || !strings.Contains(err.Error(), "only CREATE, INSERT and DROP statements") {
		t.Errorf("script with a SELECT: err = %v, want refused", err)
	}
	if n := len(srv.DDL()); n != len(want)+1 {
		t.Errorf("a refused script recorded statements: %q", srv.DDL())
	}
}

// Updates of one table through bqquota.Transport stay within the table's
// limit in every window, so none is refused.
func TestTransportTableUpdatesNeverRefused(t *testing.T) {
	l := bqquota.Limits{PerMethod: 100, TableUpdates: 5, UpdateWindow: time.Second}
	srv := quotaServer(t, &l)
	paced := &http.Client{Transport: &bqquota.Transport{Limits: l, Share: 0.8}}
	for range 6 {
		req, err := http.NewRequest(http.MethodPatch, tableURL(srv, "t"), strings.NewReader(`{"description": "x"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := paced.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("patch answered %d", resp.StatusCode)
		}
	}
	if r := srv.Rejected(); len(r) != 0 {
		t.Errorf("Rejected = %v through bqquota.Transport", r)
	}
}
