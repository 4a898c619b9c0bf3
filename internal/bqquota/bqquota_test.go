package bqquota

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestMethod(t *testing.T) {
	cases := []struct{ verb, path, method, updates string }{
		{"GET", "/bigquery/v2/projects/p/datasets/d/tables/t", TablesGet, ""},
		{"GET", "/projects/p/datasets/d/tables/t", TablesGet, ""},
		{"PATCH", "/bigquery/v2/projects/p/datasets/d/tables/t", TablesPatch, "projects/p/datasets/d/tables/t"},
		{"PUT", "/projects/p/datasets/d/tables/t", TablesUpdate, "projects/p/datasets/d/tables/t"},
		{"GET", "/projects/p/datasets/d/tables", TablesList, ""},
		{"POST", "/projects/p/datasets/d/tables", TablesInsert, ""},
		{"GET", "/projects/p/datasets/d", DatasetsGet, ""},
		{"PATCH", "/projects/p/datasets/d", DatasetsPatch, "projects/p/datasets/d"},
		{"POST", "/projects/p/datasets", DatasetsInsert, ""},
		{"GET", "/projects/p/datasets", DatasetsList, ""},
		{"POST", "/projects/p/jobs", JobsInsert, ""},
		{"GET", "/projects/p/jobs/j", JobsGet, ""},
		{"GET", "/projects/p/queries/j", JobsQueryResult, ""},
		{"POST", "/projects/p/queries", JobsQuery, ""},
		{"GET", "/projects/p/datasets/d/tables/t/data", TabledataList, ""},
		{"GET", "/projects/p/datasets/d/routines/r", RoutinesGet, ""},
		{"GET", "/projects", Other, ""},
		{"GET", "/", Other, ""},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.verb, c.path, nil)
		m, u := Method(r)
		if m != c.method || u != c.updates {
			t.Errorf("%s %s: %q %q, want %q %q", c.verb, c.path, m, u, c.method, c.updates)
		}
	}
}

// The transport spaces one method's requests at its share of the rate, and
// one table's updates at its share of the per-table limit.
func TestTransportKeepsUnderTheLimits(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	tr := &Transport{Limits: Limits{PerMethod: 50, TableUpdates: 5, UpdateWindow: time.Second}, Share: 1}
	c := &http.Client{Transport: tr}
	start := time.Now()
	for range 75 { // 50 at once (the burst), 25 more at 50/s: about 0.5 s
		resp, err := c.Get(srv.URL + "/projects/p/datasets/d/tables/t")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Errorf("75 gets at 50/s took %v, want about 0.5 s", d)
	}
	start = time.Now()
	for range 6 { // 5 a second on one table: 2 at once, then one every 1/3 s
		req, _ := http.NewRequest(http.MethodPatch, srv.URL+"/projects/p/datasets/d/tables/u", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if d := time.Since(start); d < 1200*time.Millisecond {
		t.Errorf("6 patches of one table at 5/s took %v, want about 1.3 s", d)
	}
	if n.Load() != 81 {
		t.Errorf("%d requests arrived, want 81", n.Load())
	}
}
