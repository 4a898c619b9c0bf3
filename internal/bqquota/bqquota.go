// Package bqquota is the one home of BigQuery's REST API quotas as bqcdc
// designs for them: which API method a request is (Method), the documented
// default limits (Limits), and a client-side limiter (Transport) that keeps
// one process under them, so that apply, compaction and ingest slow down
// instead of being refused. The quota-aware fake (internal/dev/fakebq)
// enforces the same Limits with the same Method, so a benchmark against it
// measures what a real project allows.
//
// The limits are BigQuery's documented defaults (cloud.google.com/bigquery/quotas,
// "API requests" and "Table limits"): about 100 requests a second per user
// and method, and 5 metadata updates per 10 s on one table (or dataset).
// They are per user (service account), so each bqcdc component, running
// as its own account, has its own share.
package bqquota

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits are the quotas a client stays under and the fake enforces.
type Limits struct {
	// PerMethod is the requests a second per user and method.
	PerMethod float64
	// TableUpdates metadata updates (insert, patch, update) of one table
	// or dataset are allowed per UpdateWindow.
	TableUpdates int
	UpdateWindow time.Duration
}

// Default are BigQuery's documented default limits.
var Default = Limits{PerMethod: 100, TableUpdates: 5, UpdateWindow: 10 * time.Second}

// API methods, as the quotas page and Cloud Monitoring name them.
const (
	DatasetsGet     = "datasets.get"
	DatasetsInsert  = "datasets.insert"
	DatasetsList    = "datasets.list"
	DatasetsPatch   = "datasets.patch"
	TablesGet       = "tables.get"
	TablesList      = "tables.list"
	TablesInsert    = "tables.insert"
	TablesPatch     = "tables.patch"
	TablesUpdate    = "tables.update"
	TablesDelete    = "tables.delete"
	JobsInsert      = "jobs.insert"
	JobsGet         = "jobs.get"
	JobsQuery       = "jobs.query"
	JobsQueryResult = "jobs.getQueryResults"
	RoutinesGet     = "routines.get"
	TabledataList   = "tabledata.list"
	Other           = "other"
)

// Method names the API method of a BigQuery REST request, and the table or
// dataset it updates ("" when it updates none): projects/P/datasets/D for a
// dataset, projects/P/datasets/D/tables/T for a table. Paths are read with
// and without the /bigquery/v2 prefix.
func Method(r *http.Request) (method, updates string) {
	p := strings.Trim(strings.TrimPrefix(r.URL.Path, "/bigquery/v2"), "/")
	parts := strings.Split(p, "/")
	if len(parts) < 3 || parts[0] != "projects" {
		return Other, ""
	}
	switch {
	case parts[2] == "jobs" && len(parts) == 3 && r.Method == http.MethodPost:
		return JobsInsert, ""
	case parts[2] == "jobs" && len(parts) == 4 && r.Method == http.MethodGet:
		return JobsGet, ""
	case parts[2] == "queries" && len(parts) == 3 && r.Method == http.MethodPost:
		return JobsQuery, ""
	case parts[2] == "queries" && len(parts) == 4 && r.Method == http.MethodGet:
		return JobsQueryResult, ""
	case parts[2] != "datasets":
		return Other, ""
	}
	dataset := ""
	if len(parts) >= 4 {
		dataset = strings.Join(parts[:4], "/")
	}
	switch {
	case len(parts) == 3 && r.Method == http.MethodGet:
		return DatasetsList, ""
	case len(parts) == 3 && r.Method == http.MethodPost:
		return DatasetsInsert, ""
	case len(parts) == 4 && r.Method == http.MethodGet:
		return DatasetsGet, ""
	case len(parts) == 4 && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
		return DatasetsPatch, dataset
	case len(parts) == 5 && parts[4] == "tables" && r.Method == http.MethodGet:
		return TablesList, ""
	case len(parts) == 5 && parts[4] == "tables" && r.Method == http.MethodPost:
		return TablesInsert, ""
	case len(parts) == 5 && parts[4] == "routines":
		return Other, ""
	case len(parts) == 6 && parts[4] == "tables":
		table := strings.Join(parts[:6], "/")
		switch r.Method {
		case http.MethodGet:
			return TablesGet, ""
		case http.MethodPatch:
			return TablesPatch, table
		case http.MethodPut:
			return TablesUpdate, table
		case http.MethodDelete:
			return TablesDelete, ""
		}
	case len(parts) == 6 && parts[4] == "routines" && r.Method == http.MethodGet:
		return RoutinesGet, ""
	case len(parts) == 7 && parts[4] == "tables" && parts[6] == "data":
		return TabledataList, ""
	}
	return Other, ""
}

// InsertedTable is the table a tables.insert request body names, for the
// per-table update limit (a creation counts as an update of the table);
// the caller decodes the body.
func InsertedTable(project, dataset, table string) string {
	return "projects/" + project + "/datasets/" + dataset + "/tables/" + table
}

// Transport limits the requests of one client to a share of Limits:
// per method at Share × PerMethod a second (bursts of a second's worth),
// and per table or dataset at Share × TableUpdates per UpdateWindow
// (half of them at once, the rest spread). A request
// waits for its turn (or its context); nothing is refused here. Base is
// the transport that sends it (http.DefaultTransport when nil).
type Transport struct {
	Base   http.RoundTripper
	Limits Limits
	// Share of the per-method rate this client takes (0: 0.8, leaving the
	// rest to the other components and to retries).
	Share float64

	mu      sync.Mutex
	methods map[string]*rate.Limiter
	updates map[string]*rate.Limiter
}

// NewTransport limits base to the default limits.
func NewTransport(base http.RoundTripper) *Transport {
	return &Transport{Base: base, Limits: Default}
}

func (t *Transport) limiters(method, updates string) (*rate.Limiter, *rate.Limiter) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.methods == nil {
		t.methods, t.updates = map[string]*rate.Limiter{}, map[string]*rate.Limiter{}
	}
	l := t.Limits
	if l.PerMethod == 0 {
		l = Default
	}
	share := t.Share
	if share <= 0 || share > 1 {
		share = 0.8
	}
	m := t.methods[method]
	if m == nil {
		r := l.PerMethod * share
		m = rate.NewLimiter(rate.Limit(r), max(1, int(r)))
		t.methods[method] = m
	}
	if updates == "" {
		return m, nil
	}
	u := t.updates[updates]
	if u == nil {
		// A bucket of burst b refilled at r lets b + r·window through in
		// any window: half the share at once (the few updates an object
		// takes when it is made: describe its columns, label it), the
		// other half spread over the window, so no window ever sees more
		// than the share.
		allowed := float64(l.TableUpdates) * share
		burst := max(1, int(allowed/2))
		r := max(allowed-float64(burst), 0.5) / l.UpdateWindow.Seconds()
		u = rate.NewLimiter(rate.Limit(r), burst)
		t.updates[updates] = u
	}
	return m, u
}

// RoundTrip waits for the request's turn, then sends it.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	method, updates := Method(r)
	m, u := t.limiters(method, updates)
	ctx := r.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if err := m.Wait(ctx); err != nil {
		return nil, err
	}
	if u != nil {
		if err := u.Wait(ctx); err != nil {
			return nil, err
		}
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}
