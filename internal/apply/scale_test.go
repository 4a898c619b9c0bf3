package apply

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/benchsize"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/progress"
	"github.com/bqcdc/bqcdc/sql/render"
	"github.com/google/go-cmp/cmp"
)

var rtt = flag.Duration("apply.rtt", 10*time.Millisecond, "simulated round trip of a BigQuery REST call in BenchmarkApply1000Flows")

// countingTransport counts the REST requests a BigQuery client makes, by
// method and path, and can add a round trip's latency to each.
type countingTransport struct {
	base    http.RoundTripper
	latency time.Duration

	mu    sync.Mutex
	calls map[string]int // "GET projects/p/datasets/d/tables/t"
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Method + " " + strings.Trim(strings.TrimPrefix(r.URL.Path, "/bigquery/v2"), "/")
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[key]++
	c.mu.Unlock()
	if c.latency > 0 {
		time.Sleep(c.latency)
	}
	return c.base.RoundTrip(r)
}

// take returns the calls counted so far and starts counting afresh.
func (c *countingTransport) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// scaleDeployment generates sources topics, each with an Avro value schema
// of 12 fields (a 20-column changelog) in a schemas folder, and two flows
// (rendercases.ScaleFlowFile): an SCD 1 current state in the default
// dataset and an SCD 2 history in dataset history.
func scaleDeployment(t testing.TB, sources int) ([]*flow.Flow, Schemas) {
	t.Helper()
	dir := t.TempDir()
	names := make([]string, 0, sources)
	srcs := make(map[string]string, sources)
	for i := range sources {
		topic := fmt.Sprintf("dbserver1.shop.table_%03d", i)
		avsc := `{"type": "record", "name": "Value", "namespace": "` + topic + `", "fields": [
			{"name": "id", "type": "long"},
			{"name": "tenant_id", "type": "string"},
			{"name": "name", "type": ["null", "string"], "default": null},
			{"name": "email", "type": ["null", "string"], "default": null},
			{"name": "status", "type": ["null", "string"], "default": null},
			{"name": "amount", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}], "default": null},
			{"name": "balance", "type": ["null", "double"], "default": null},
			{"name": "created_at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": null},
			{"name": "updated_at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": null},
			{"name": "birth_date", "type": ["null", {"type": "int", "logicalType": "date"}], "default": null},
			{"name": "is_active", "type": ["null", "boolean"], "default": null},
			{"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}]}`
		if err := os.WriteFile(filepath.Join(dir, catalog.Subject(topic)+".avsc"), []byte(avsc), 0o644); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("table_%03d.sql", i)
		names = append(names, name)
		srcs[name] = rendercases.ScaleFlowFile(i, topic)
	}
	flows, errs := flow.ParseFiles(names, srcs)
	if len(errs) > 0 {
		t.Fatalf("%d flows refused, the first: %v", len(errs), errs[0])
	}
	return flows, Schemas{Dir: dir}
}

// fakeClient is a BigQuery client of the fake whose requests are counted.
func fakeClient(t testing.TB, latency time.Duration) (*bigquery.Client, *countingTransport) {
	bq, _, counter := fakeClients(t, latency)
	return bq, counter
}

// testTarget is the deployment the tests apply, on the fake's project;
// testLoc is where its flows' names resolve.
var (
	testTarget = Target{Project: fakebq.DefaultProject, Dataset: "cdc"}
	testLoc    = catalog.Location{Project: testTarget.Project, DefaultDataset: testTarget.Dataset}
)

// fakeClients is fakeClient with a table lister of the same fake, whose
// requests are counted with the client's.
func fakeClients(t testing.TB, latency time.Duration) (*bigquery.Client, *clients.TableLister, *countingTransport) {
	t.Helper()
	srv := fakebq.Start(t, fakebq.Options{})
	counter := &countingTransport{base: http.DefaultTransport, latency: latency}
	bq, lister := srv.ClientsVia(t, counter)
	return bq, lister, counter
}

// objectOf is the object a report line names ("table x_changelog: created"
// -> "table x_changelog").
func objectOf(line string) string { return line[:strings.LastIndex(line, ": ")] }

// At scale, apply creates everything concurrently yet reports it in a fixed
// order, and a second apply changes nothing with one metadata read per
// object: no write, no query job, no dataset read per flow.
func TestApplyConcurrentlyThenReadOnly(t *testing.T) {
	ctx := context.Background()
	const sources = 60
	flows, schemas := scaleDeployment(t, sources)
	bq, counter := fakeClient(t, 0)
	target := testTarget

	var out strings.Builder
	meter := &progress.Meter{W: &out, Label: "apply", Unit: "objects", Every: 50}
	var first Report
	if _, err := AllWith(ctx, bq, target, flows, schemas, Options{Concurrency: 8, Progress: meter}, &first); err != nil {
		t.Fatal(err)
	}
	meter.Finish()
	// datasets cdc and history, changelogs, shared, flows (change table,
	// state table, view, two table functions: _at and _changes), the
	// status view
	objects := 2 + sources + 4 + 5*len(flows) + 1
	if len(first) != objects {
		t.Fatalf("first apply reported %d objects, want %d:\n%s", len(first), objects, strings.Join(first, "\n"))
	}
	// The order is the plan's, not the order objects finished in.
	want := []string{"dataset cdc", "dataset history"}
	for i := range sources {
		want = append(want, fmt.Sprintf("table dbserver1_shop_table_%03d_changelog", i))
	}
	want = append(want, "table "+catalog.DeadLetterTable, "table "+catalog.AppendsTable, "table "+catalog.CompactionRunsTable, "view "+catalog.CompactionStateView)
	functions := 0
	for _, f := range flows {
		ds := f.Target.Dataset
		if ds == "" {
			ds = "cdc"
		}
		want = append(want, "table "+catalog.ChangesName(f), "table "+catalog.StateName(f), "view "+f.Target.String(),
			"table function "+ds+"."+catalog.AtFunctionName(f), "table function "+ds+"."+catalog.ChangesFunctionName(f))
		functions += 2
	}
	want = append(want, "view "+catalog.StatusView)
	var got []string
	for _, line := range first {
		got = append(got, objectOf(line))
		if !strings.HasSuffix(line, ": created") && !strings.HasSuffix(line, ": created or replaced") {
			t.Errorf("first apply: %q, want created", line)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("report order (-want +got):\n%s", d)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, fmt.Sprintf("apply: %d/%d objects (100 %%)", objects, objects)) {
		t.Errorf("last progress line %q", last)
	}
	if len(lines) < objects/50 || len(lines) > objects/50+2 {
		t.Errorf("%d progress lines for %d objects at one per 50:\n%s", len(lines), objects, out.String())
	}
	// A flow's table functions are one DDL script, nothing else is a query.
	calls := counter.take()
	if n := calls["POST projects/"+fakebq.DefaultProject+"/jobs"]; n != len(flows) {
		t.Errorf("first apply started %d jobs, want %d (one script per flow)", n, len(flows))
	}

	var second Report
	if _, err := AllWith(ctx, bq, target, flows, schemas, Options{Concurrency: 8}, &second); err != nil {
		t.Fatal(err)
	}
	for i, line := range second {
		if !strings.HasSuffix(line, ": unchanged") && !strings.HasSuffix(line, ": exists") {
			t.Errorf("second apply changed something: %q", line)
		}
		if i < len(got) && objectOf(line) != got[i] {
			t.Errorf("second apply line %d is %q, the first's %q", i, line, got[i])
		}
	}
	calls = counter.take()
	reads := 0
	for call, n := range calls {
		if !strings.HasPrefix(call, "GET ") {
			t.Errorf("second apply: %d× %s, want reads only", n, call)
		}
		if n > 1 {
			t.Errorf("second apply: %d× %s, want at most one read per object", n, call)
		}
		reads += n
	}
	if reads != objects-functions { // a function is checked by its view's label: no read of its own
		keys := make([]string, 0, len(calls))
		for k := range calls {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Errorf("second apply made %d reads for %d objects:\n%s", reads, objects, strings.Join(keys, "\n"))
	}
}

// BenchmarkApply1000Flows measures bqcdc apply of 1,000 flows over 500
// sources (2,505 objects) against the in-process fake with every REST
// call delayed by a simulated round trip (-apply.rtt, 10 ms by default;
// BigQuery's table metadata calls take tens to hundreds of milliseconds),
// so that the time shows what the concurrency bound buys: first applies
// create everything, second applies find everything unchanged (-short:
// 40 flows).
func BenchmarkApply1000Flows(b *testing.B) {
	flows, schemas := scaleDeployment(b, benchsize.Pick(500, 20, ""))
	target := testTarget
	apply := func(b *testing.B, bq *bigquery.Client, n int) {
		var rep Report
		if _, err := AllWith(context.Background(), bq, target, flows, schemas, Options{Concurrency: n}, &rep); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("first/concurrency=%d", n), func(b *testing.B) {
			requests := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bq, counter := fakeClient(b, *rtt)
				b.StartTimer()
				apply(b, bq, n)
				for _, c := range counter.take() {
					requests += c
				}
			}
			b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
		})
		b.Run(fmt.Sprintf("second/concurrency=%d", n), func(b *testing.B) {
			bq, counter := fakeClient(b, 0)
			apply(b, bq, 32)
			counter.take()
			counter.latency = *rtt
			requests := 0
			for i := 0; i < b.N; i++ {
				apply(b, bq, n)
				for _, c := range counter.take() {
					requests += c
				}
			}
			b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
		})
	}
}

// BenchmarkRenderCommand1000Flows is what bqcdc render does for 1,000 flows
// over 500 sources, printing aside: read and convert 500 Avro schemas from
// the schemas folder, bind, and render every view. (sql/render's
// BenchmarkRender1000Flows covers parsing and the compaction statements.)
func BenchmarkRenderCommand1000Flows(b *testing.B) {
	flows, schemas := scaleDeployment(b, 500)
	loc := catalog.Location{Project: "my-project", DefaultDataset: "cdc"}
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range mustBind(b, flows, schemas) {
			if _, err := plan.For(f, loc).View(render.Epoch, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}
