package fakebq

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"time"

	"cloud.google.com/go/bigquery"
	bq "google.golang.org/api/bigquery/v2"
)

// What `bqcdc apply` needs beyond tables.get and tables.patch: datasets.get
// and datasets.insert, tables.insert of tables and views, and tables.list. A dataset
// exists once created here or once AddTable registered a table in it, so
// tests written before datasets existed in the fake behave as before. Like
// BigQuery, inserting what exists fails with 409 and inserting a table into
// a missing dataset with 404.

// serveAdmin answers the dataset and table-insert requests, reporting
// whether it did (otherwise ServeHTTP answers tables.get and tables.patch).
// parts is the request path split at '/', without /bigquery/v2.
func (h restHandler) serveAdmin(w http.ResponseWriter, r *http.Request, parts []string) bool {
	if len(parts) < 3 || parts[0] != "projects" || parts[2] != "datasets" {
		return false
	}
	project := parts[1]
	switch {
	case len(parts) == 3 && r.Method == http.MethodPost:
		h.s.insertDataset(w, r, project)
	case len(parts) == 4 && r.Method == http.MethodGet:
		h.s.getDataset(w, project, parts[3])
	case len(parts) == 5 && parts[4] == "tables" && r.Method == http.MethodPost:
		h.s.insertTable(w, r, project, parts[3])
	case len(parts) == 5 && parts[4] == "tables" && r.Method == http.MethodGet:
		h.s.listTables(w, r, project, parts[3])
	default:
		return false
	}
	return true
}

func (s *Server) hasDataset(project, dataset string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hasDatasetLocked(project, dataset)
}

// hasDatasetLocked is hasDataset for a caller holding s.mu.
func (s *Server) hasDatasetLocked(project, dataset string) bool {
	if s.datasets[project+"/"+dataset] {
		return true
	}
	for _, t := range s.tables {
		if t.project == project && t.dataset == dataset {
			return true
		}
	}
	return false
}

func (s *Server) getDataset(w http.ResponseWriter, project, dataset string) {
	if !s.hasDataset(project, dataset) {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Dataset %s:%s", project, dataset))
		return
	}
	writeJSON(w, datasetResource(project, dataset))
}

func datasetResource(project, dataset string) *bq.Dataset {
	return &bq.Dataset{
		Kind:             "bigquery#dataset",
		Id:               project + ":" + dataset,
		DatasetReference: &bq.DatasetReference{ProjectId: project, DatasetId: dataset},
		Location:         "US",
		Etag:             "fakebq-dataset",
	}
}

func (s *Server) insertDataset(w http.ResponseWriter, r *http.Request, project string) {
	var body bq.Dataset
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.DatasetReference == nil {
		writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("fakebq: decoding the dataset: %v", err))
		return
	}
	dataset := body.DatasetReference.DatasetId
	if s.hasDataset(project, dataset) {
		writeError(w, http.StatusConflict, "duplicate", fmt.Sprintf("Already Exists: Dataset %s:%s", project, dataset))
		return
	}
	s.mu.Lock()
	if s.datasets == nil {
		s.datasets = map[string]bool{}
	}
	s.datasets[project+"/"+dataset] = true
	s.mu.Unlock()
	writeJSON(w, datasetResource(project, dataset))
}

// insertTable creates a table or a view from a tables.insert body: schema,
// description, labels, time partitioning, clustering, view query.
func (s *Server) insertTable(w http.ResponseWriter, r *http.Request, project, dataset string) {
	var body bq.Table
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.TableReference == nil {
		writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("fakebq: decoding the table: %v", err))
		return
	}
	if !s.hasDataset(project, dataset) {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Dataset %s:%s", project, dataset))
		return
	}
	spec := Table{Labels: body.Labels, Description: body.Description}
	if body.Schema != nil {
		var ok bool
		if spec.Schema, ok = readSchema(w, body.Schema); !ok {
			return
		}
	}
	if spec.Schema == nil {
		spec.Schema = bigquery.Schema{} // a view's: BigQuery would derive it from the query
	}
	if tp := body.TimePartitioning; tp != nil {
		spec.TimePartitioning = &bigquery.TimePartitioning{Type: bigquery.TimePartitioningType(tp.Type), Field: tp.Field,
			Expiration: time.Duration(tp.ExpirationMs) * time.Millisecond}
	}
	if c := body.Clustering; c != nil {
		spec.Clustering = &bigquery.Clustering{Fields: c.Fields}
	}
	if v := body.View; v != nil {
		spec.ViewQuery = v.Query
	}
	name := body.TableReference.TableId
	path := tablePath(project, dataset, name)
	// The table is complete before it is registered: a tables.get racing
	// this insert finds it whole or not at all.
	t := &table{path: path, project: project, dataset: dataset, name: name, created: time.Now()}
	if err := t.set(spec); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	s.mu.Lock()
	if s.tables[path] != nil || s.routines[path] {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "duplicate", fmt.Sprintf("Already Exists: Table %s:%s.%s", project, dataset, name))
		return
	}
	// BigQuery analyses a view's query when it is made: what it reads
	// must exist (ddl.go).
	if msg := s.missingReference(spec.ViewQuery, path); spec.ViewQuery != "" && msg != "" {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "notFound", msg)
		return
	}
	s.tables[path] = t
	s.mu.Unlock()
	t.mu.Lock()
	out := t.resource
	t.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write(out)
}

// Page sizes of tables.list: BigQuery's default when maxResults is not
// given, and the most the fake returns in one page whatever is asked
// (BigQuery documents no maximum; 1,000 is what a client can count on).
const (
	DefaultListPage = 50
	MaxListPage     = 1000
)

// listTables answers tables.list: the dataset's tables and views in name
// order, a page at a time (pageToken is the offset), each with what
// BigQuery's listing reports of it: type, labels, partitioning,
// clustering, creation time. Not the schema, description, row counts or
// last modification time, which only tables.get returns.
func (s *Server) listTables(w http.ResponseWriter, r *http.Request, project, dataset string) {
	if !s.hasDataset(project, dataset) {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Dataset %s:%s", project, dataset))
		return
	}
	size := DefaultListPage
	if v := r.URL.Query().Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "invalid", "fakebq: bad maxResults "+v)
			return
		}
		size = min(n, MaxListPage)
	}
	offset := 0
	if v := r.URL.Query().Get("pageToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "invalid", "fakebq: bad pageToken "+v)
			return
		}
		offset = n
	}
	s.mu.RLock()
	var in []*table
	for _, t := range s.tables {
		if t.project == project && t.dataset == dataset {
			in = append(in, t)
		}
	}
	s.mu.RUnlock()
	sort.Slice(in, func(i, j int) bool { return in[i].name < in[j].name })
	out := &bq.TableList{Kind: "bigquery#tableList", TotalItems: int64(len(in))}
	end := min(len(in), offset+size)
	for _, t := range in[min(offset, end):end] {
		t.mu.Lock()
		item := &bq.TableListTables{
			Kind:           "bigquery#table",
			Id:             fmt.Sprintf("%s:%s.%s", t.project, t.dataset, t.name),
			TableReference: &bq.TableReference{ProjectId: t.project, DatasetId: t.dataset, TableId: t.name},
			Type:           "TABLE",
			Labels:         maps.Clone(t.spec.Labels),
			CreationTime:   t.created.UnixMilli(),
		}
		if t.spec.ViewQuery != "" {
			item.Type = "VIEW"
			item.View = &bq.TableListTablesView{}
		}
		if tp := t.spec.TimePartitioning; tp != nil {
			item.TimePartitioning = &bq.TimePartitioning{Type: string(tp.Type), Field: tp.Field, ExpirationMs: tp.Expiration.Milliseconds()}
		}
		if c := t.spec.Clustering; c != nil {
			item.Clustering = &bq.Clustering{Fields: c.Fields}
		}
		t.mu.Unlock()
		out.Tables = append(out.Tables, item)
	}
	if end < len(in) {
		out.NextPageToken = strconv.Itoa(end)
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(v)
}
