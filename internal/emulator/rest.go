package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// WrapREST puts the REST concessions (see the package doc: 3, 4 and 5) in
// front of the emulator's REST handler.
func WrapREST(next http.Handler) http.Handler {
	return gated(&restShim{schema: &schemaShim{next: next}})
}

// restShim translates what the emulator says so that bqcdc's code, written
// for BigQuery, reads it as BigQuery would say it.
type restShim struct{ schema *schemaShim }

func (s *restShim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := standardFloatNames(r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	lw := &lockedAsUnavailable{ResponseWriter: w}
	s.schema.ServeHTTP(lw, r)
	lw.finish()
}

// standardFloatNames rewrites the legacy type name FLOAT to FLOAT64 in the
// schema of a table being created or changed (concession 4). BigQuery treats
// both names alike; the emulator refuses INSERT ... SELECT of a FLOAT64
// value into a column created as FLOAT, which compaction's INSERT into a
// state table does.
func standardFloatNames(r *http.Request) error {
	if r.Body == nil || !tableWrite(r) {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var res map[string]any
	if json.Unmarshal(body, &res) != nil {
		return nil
	}
	sch, _ := res["schema"].(map[string]any)
	if sch == nil || !renameFloat(sch["fields"]) {
		return nil
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

var tablesPath = regexp.MustCompile(`^(?:/bigquery/v2)?/projects/[^/]+/datasets/[^/]+/tables(?:/[^/]+)?$`)

func tableWrite(r *http.Request) bool {
	switch methodOf(r) {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return tablesPath.MatchString(r.URL.Path)
	}
	return false
}

func methodOf(r *http.Request) string {
	if o := r.Header.Get("X-HTTP-Method-Override"); r.Method == http.MethodPost && o != "" {
		return strings.ToUpper(strings.TrimSpace(o))
	}
	return r.Method
}

func renameFloat(fields any) bool {
	list, _ := fields.([]any)
	changed := false
	for _, f := range list {
		m, _ := f.(map[string]any)
		if m == nil {
			continue
		}
		if m["type"] == "FLOAT" {
			m["type"] = "FLOAT64"
			changed = true
		}
		if renameFloat(m["fields"]) {
			changed = true
		}
	}
	return changed
}

// lockedAsUnavailable answers 503 (backendError) where the emulator answers
// with SQLite's "database is locked" (concession 5): BigQuery's own
// transient failures are 5xx, and bqcdc retries those by their code. Only
// error responses are held back to be read; successes stream through.
type lockedAsUnavailable struct {
	http.ResponseWriter
	code int
	held *bytes.Buffer
}

func (l *lockedAsUnavailable) WriteHeader(code int) {
	if code >= 400 {
		l.code, l.held = code, &bytes.Buffer{}
		return
	}
	l.ResponseWriter.WriteHeader(code)
}

func (l *lockedAsUnavailable) Write(b []byte) (int, error) {
	if l.held != nil {
		return l.held.Write(b)
	}
	return l.ResponseWriter.Write(b)
}

func (l *lockedAsUnavailable) finish() {
	if l.held == nil {
		return
	}
	if bytes.Contains(bytes.ToLower(l.held.Bytes()), []byte("database is locked")) {
		msg := "the BigQuery emulator's SQLite database is locked by a concurrent write; retry"
		l.ResponseWriter.Header().Set("Content-Type", "application/json")
		l.ResponseWriter.Header().Del("Content-Length")
		l.ResponseWriter.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(l.ResponseWriter).Encode(map[string]any{"error": map[string]any{"code": 503, "message": msg,
			"errors": []map[string]any{{"reason": "backendError", "message": msg}}}})
		return
	}
	l.ResponseWriter.WriteHeader(l.code)
	l.ResponseWriter.Write(l.held.Bytes())
}

// schemaShim gives tables.update and tables.patch the effect they have in
// BigQuery when they add columns (concession 3). The emulator stores the new
// schema in the table's metadata but its SQL engine keeps the old columns
// (goccy/bigquery-emulator v0.8.1: the column is reported by tables.get and
// accepted by the Storage Write API, but not queryable, and rows lose its
// values).
//
// bqcdc's own code is unchanged by the shim: it calls tables.update through
// the BigQuery client exactly as it does against BigQuery. When the request
// adds columns (top-level or RECORD fields), the shim first rebuilds the
// table the way the emulator can: copy the rows aside, recreate the table
// with the new schema (partitioning, clustering, labels and description
// kept), copy the rows back with NULL in the new columns, drop the copy.
// Then it forwards the request. A view whose query changes is likewise
// dropped and created again (the emulator keeps answering with a view's
// first query otherwise). Rebuilds are serialised; rows appended to
// the table while one runs can be lost, which BigQuery's in-place change
// never does, so tests evolve a table only while nothing else writes to it.
type schemaShim struct {
	next http.Handler // the emulator's REST handler
	mu   sync.Mutex
}

var tablePath = regexp.MustCompile(`^(?:/bigquery/v2)?/projects/([^/]+)/datasets/([^/]+)/tables/([^/]+)$`)

type fieldJSON struct {
	Name   string      `json:"name"`
	Type   string      `json:"type"`
	Mode   string      `json:"mode,omitempty"`
	Fields []fieldJSON `json:"fields,omitempty"`
}

type schemaJSON struct {
	Fields []fieldJSON `json:"fields"`
}

func (s *schemaShim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.replaceTable(w, r) {
		return
	}
	method := methodOf(r)
	m := tablePath.FindStringSubmatch(r.URL.Path)
	if m == nil || (method != http.MethodPatch && method != http.MethodPut) {
		s.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Schema *schemaJSON `json:"schema"`
		View   *struct {
			Query string `json:"query"`
		} `json:"view"`
	}
	if json.Unmarshal(body, &req) != nil || (req.Schema == nil && req.View == nil) {
		s.next.ServeHTTP(w, r)
		return
	}
	s.mu.Lock()
	if req.View != nil && req.View.Query != "" {
		err = s.redefine(m[1], m[2], m[3], req.View.Query)
	} else if req.Schema != nil {
		err = s.evolve(m[1], m[2], m[3], req.Schema.Fields)
	}
	s.mu.Unlock()
	if err != nil {
		writeShimError(w, fmt.Errorf("local BigQuery schema shim: %w", err))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.next.ServeHTTP(w, r)
}

func writeShimError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 500, "message": err.Error(),
		"errors": []map[string]any{{"reason": "backendError", "message": err.Error()}}}})
}

// redefine recreates a view whose query changes: the emulator keeps
// answering with the query a view was created with.
func (s *schemaShim) redefine(project, dataset, table, query string) error {
	var cur map[string]any
	if code, err := s.call(http.MethodGet, s.tableURL(project, dataset, table), nil, &cur); err != nil || code != http.StatusOK {
		return nil
	}
	view, _ := cur["view"].(map[string]any)
	if t, _ := cur["type"].(string); t != "VIEW" || view == nil || view["query"] == query {
		return nil
	}
	if err := s.ok(http.MethodDelete, s.tableURL(project, dataset, table), nil); err != nil {
		return fmt.Errorf("dropping view %s: %w", table, err)
	}
	res := map[string]any{"tableReference": map[string]any{"projectId": project, "datasetId": dataset, "tableId": table},
		"view": map[string]any{"query": query, "useLegacySql": false}}
	for _, k := range []string{"labels", "description"} {
		if v, ok := cur[k]; ok {
			res[k] = v
		}
	}
	if err := s.ok(http.MethodPost, s.datasetURL(project, dataset)+"/tables", res); err != nil {
		return fmt.Errorf("recreating view %s: %w", table, err)
	}
	return nil
}

// evolve rebuilds project.dataset.table if fields add columns to it.
func (s *schemaShim) evolve(project, dataset, table string, fields []fieldJSON) error {
	var cur map[string]any
	if code, err := s.call(http.MethodGet, s.tableURL(project, dataset, table), nil, &cur); err != nil || code != http.StatusOK {
		return nil // let the emulator answer (not found, ...)
	}
	if t, _ := cur["type"].(string); t != "" && t != "TABLE" {
		return nil
	}
	var old schemaJSON
	if raw, err := json.Marshal(cur["schema"]); err == nil {
		json.Unmarshal(raw, &old)
	}
	if !adds(old.Fields, fields) {
		return nil
	}
	tmp := table + "__bqcdc_shim_copy"
	ref := func(t string) string { return fmt.Sprintf("`%s.%s.%s`", project, dataset, t) }
	create := func(id string, schema []fieldJSON) error {
		res := map[string]any{"tableReference": map[string]any{"projectId": project, "datasetId": dataset, "tableId": id},
			"schema": schemaJSON{Fields: merged(old.Fields, schema)}}
		if id == table {
			for _, k := range []string{"timePartitioning", "clustering", "labels", "description"} {
				if v, ok := cur[k]; ok {
					res[k] = v
				}
			}
		}
		return s.ok(http.MethodPost, s.datasetURL(project, dataset)+"/tables", res)
	}
	if err := create(tmp, old.Fields); err != nil {
		return fmt.Errorf("creating the copy of %s: %w", table, err)
	}
	if err := s.query(project, fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", ref(tmp), ref(table))); err != nil {
		return fmt.Errorf("copying %s aside: %w", table, err)
	}
	if err := s.ok(http.MethodDelete, s.tableURL(project, dataset, table), nil); err != nil {
		return fmt.Errorf("dropping %s: %w", table, err)
	}
	if err := create(table, fields); err != nil {
		return fmt.Errorf("recreating %s with its new schema (its rows are in %s): %w", table, tmp, err)
	}
	newFields := merged(old.Fields, fields)
	cols := make([]string, len(old.Fields))
	exprs := make([]string, len(old.Fields))
	for i, f := range old.Fields {
		cols[i] = "`" + f.Name + "`"
		exprs[i] = widen("`"+f.Name+"`", f, find(newFields, f.Name)) + " AS `" + f.Name + "`"
	}
	if err := s.query(project, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s",
		ref(table), strings.Join(cols, ", "), strings.Join(exprs, ", "), ref(tmp))); err != nil {
		return fmt.Errorf("copying the rows back into %s (they are in %s): %w", table, tmp, err)
	}
	// The emulator's default write stream of the table still has the old
	// schema: make the connections use a fresh one.
	tableRecreated(project, dataset, table)
	return s.ok(http.MethodDelete, s.tableURL(project, dataset, tmp), nil)
}

// adds reports whether want has a column or RECORD field that have lacks.
func adds(have, want []fieldJSON) bool {
	for _, w := range want {
		h := find(have, w.Name)
		if h == nil || adds(h.Fields, w.Fields) {
			return true
		}
	}
	return false
}

// merged is want with have's fields that want lacks kept (a tables.update
// that drops a column is refused by BigQuery; keep them rather than lose rows).
func merged(have, want []fieldJSON) []fieldJSON {
	out := append([]fieldJSON{}, want...)
	for _, h := range have {
		if find(want, h.Name) == nil {
			out = append(out, h)
		}
	}
	return out
}

func find(fs []fieldJSON, name string) *fieldJSON {
	for i := range fs {
		if strings.EqualFold(fs[i].Name, name) {
			return &fs[i]
		}
	}
	return nil
}

// widen renders an expression turning a value of the old field into the new
// field's shape: RECORDs gain their new fields as NULL.
func widen(expr string, old fieldJSON, nw *fieldJSON) string {
	if nw == nil || len(old.Fields) == 0 || !adds(old.Fields, nw.Fields) {
		return expr
	}
	if old.Mode == "REPEATED" {
		return fmt.Sprintf("ARRAY(SELECT %s FROM UNNEST(%s) AS e)", structOf("e", old, *nw), expr)
	}
	return fmt.Sprintf("IF(%s IS NULL, NULL, %s)", expr, structOf(expr, old, *nw))
}

func structOf(expr string, old, nw fieldJSON) string {
	parts := make([]string, len(nw.Fields))
	for i, f := range nw.Fields {
		if o := find(old.Fields, f.Name); o != nil {
			parts[i] = widen(expr+".`"+o.Name+"`", *o, &f) + " AS `" + f.Name + "`"
		} else {
			parts[i] = "CAST(NULL AS " + sqlType(f) + ") AS `" + f.Name + "`"
		}
	}
	return "STRUCT(" + strings.Join(parts, ", ") + ")"
}

func sqlType(f fieldJSON) string {
	t := map[string]string{"INTEGER": "INT64", "FLOAT": "FLOAT64", "BOOLEAN": "BOOL", "RECORD": "STRUCT"}[f.Type]
	if t == "" {
		t = f.Type
	}
	if t == "STRUCT" {
		parts := make([]string, len(f.Fields))
		for i, sf := range f.Fields {
			parts[i] = "`" + sf.Name + "` " + sqlType(sf)
		}
		t = "STRUCT<" + strings.Join(parts, ", ") + ">"
	}
	if f.Mode == "REPEATED" {
		t = "ARRAY<" + t + ">"
	}
	return t
}

func (s *schemaShim) datasetURL(project, dataset string) string {
	return "/bigquery/v2/projects/" + url.PathEscape(project) + "/datasets/" + url.PathEscape(dataset)
}

func (s *schemaShim) tableURL(project, dataset, table string) string {
	return s.datasetURL(project, dataset) + "/tables/" + url.PathEscape(table)
}

func (s *schemaShim) query(project, sql string) error {
	return s.ok(http.MethodPost, "/bigquery/v2/projects/"+url.PathEscape(project)+"/queries",
		map[string]any{"query": sql, "useLegacySql": false})
}

func (s *schemaShim) ok(method, u string, body any) error {
	var out map[string]any
	code, err := s.call(method, u, body, &out)
	if err != nil {
		return err
	}
	if code/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %v", method, u, code, out["error"])
	}
	return nil
}

// call runs a request through the emulator's handler in process.
func (s *schemaShim) call(method, u string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, u, rd)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.next.ServeHTTP(rec, req)
	if b := rec.Body.Bytes(); len(b) > 0 && out != nil {
		json.Unmarshal(b, out)
	}
	return rec.Code, nil
}
