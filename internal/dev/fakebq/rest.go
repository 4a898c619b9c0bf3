package fakebq

import (
	"encoding/json"
	"fmt"
	"net/http"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter/adapt"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	bq "google.golang.org/api/bigquery/v2"
)

// restHandler serves tables.get and tables.patch (and, in admin.go,
// datasets.get, datasets.insert and tables.insert; in jobs.go, DDL jobs),
// each after the simulated round trip and within the quota (quota.go).
type restHandler struct{ s *Server }

// FailRESTNext answers the next len(codes) tables requests with these HTTP
// status codes, in BigQuery's error JSON (5xx with reason backendError,
// which the client library and bqerror treat as transient).
func (s *Server) FailRESTNext(codes ...int) {
	s.faultMu.Lock()
	s.restFails = append(s.restFails, codes...)
	s.faultMu.Unlock()
}

func (h restHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	// The round trip first, so that the request is counted, and its quota
	// taken, when it would have reached BigQuery.
	if !s.roundTrip(r.Context()) {
		return
	}
	parts := restParts(r)
	// Before the injected failures: a refused request consumes none.
	if msg := s.quota.admit(r, parts); msg != "" {
		writeError(w, http.StatusForbidden, "rateLimitExceeded", msg)
		return
	}
	s.faultMu.Lock()
	fail := 0
	if len(s.restFails) > 0 {
		fail, s.restFails = s.restFails[0], s.restFails[1:]
	}
	s.faultMu.Unlock()
	if fail != 0 {
		reason := "backendError"
		if fail < 500 {
			reason = "invalid"
		}
		writeError(w, fail, reason, "fakebq: injected failure")
		return
	}
	if h.serveAdmin(w, r, parts) || h.serveJobs(w, r, parts) {
		return
	}
	if len(parts) != 6 || parts[0] != "projects" || parts[2] != "datasets" || parts[4] != "tables" {
		writeError(w, http.StatusNotFound, "notFound", "fakebq serves only tables.get and tables.patch: "+r.Method+" "+r.URL.Path)
		return
	}
	project, dataset, name := parts[1], parts[3], parts[5]
	t := s.table(tablePath(project, dataset, name))
	if t == nil {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Table %s:%s.%s", project, dataset, name))
		return
	}
	switch r.Method {
	case http.MethodGet:
		t.mu.Lock()
		body := t.resource
		t.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		_, _ = w.Write(body)
	case http.MethodPatch:
		t.patch(w, r)
	default:
		writeError(w, http.StatusMethodNotAllowed, "invalid", "fakebq serves only tables.get and tables.patch")
	}
}

// readSchema converts a request body's table schema; on an invalid one it
// writes a 400 and reports false.
func readSchema(w http.ResponseWriter, ts *bq.TableSchema) (bigquery.Schema, bool) {
	fields, err := json.Marshal(ts.Fields)
	var schema bigquery.Schema
	if err == nil {
		schema, err = bigquery.SchemaFromJSON(fields)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "fakebq: reading the schema: "+err.Error())
		return nil, false
	}
	return schema, true
}

// patch applies a tables.patch body: schema (replaced), description,
// labels (merged; a null value deletes the label). An If-Match header that
// is not the current etag fails with 412, as BigQuery's does.
func (t *table) patch(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Schema      *bq.TableSchema    `json:"schema"`
		Description *string            `json:"description"`
		Labels      map[string]*string `json:"labels"`
		View        *bq.ViewDefinition `json:"view"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "fakebq: decoding the table: "+err.Error())
		return
	}
	// One patch at a time per table, so that of two racing patches with
	// the same etag the second fails, as in BigQuery.
	t.patchMu.Lock()
	defer t.patchMu.Unlock()
	t.mu.Lock()
	if m := r.Header.Get("If-Match"); m != "" && m != t.etag() {
		t.mu.Unlock()
		writeError(w, http.StatusPreconditionFailed, "conditionNotMet", "Precondition check failed.")
		return
	}
	spec := t.spec
	t.mu.Unlock()
	if body.Schema != nil {
		var ok bool
		if spec.Schema, ok = readSchema(w, body.Schema); !ok {
			return
		}
		spec.Columns = nil
	}
	if body.Description != nil {
		spec.Description = *body.Description
	}
	if body.View != nil && spec.ViewQuery != "" {
		spec.ViewQuery = body.View.Query
	}
	if body.Labels != nil {
		labels := map[string]string{}
		for k, v := range spec.Labels {
			labels[k] = v
		}
		for k, v := range body.Labels {
			if v == nil {
				delete(labels, k)
			} else {
				labels[k] = *v
			}
		}
		spec.Labels = labels
	}
	if err := t.set(spec); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	t.mu.Lock()
	out := t.resource
	t.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write(out)
}

// render returns the tables.get resource of the table's current version.
// It fills what bigquery.Table.Metadata reads (bqToTableMetadata): schema,
// labels, description, etag, type, location, creation and last modified
// times (milliseconds, as strings), partitioning and clustering.
// t.mu is held.
func (t *table) render() ([]byte, error) {
	fieldsJSON, err := t.schema.ToJSONFields()
	if err != nil {
		return nil, err
	}
	var fields []*bq.TableFieldSchema
	if err := json.Unmarshal(fieldsJSON, &fields); err != nil {
		return nil, err
	}
	res := &bq.Table{
		Kind:             "bigquery#table",
		Id:               fmt.Sprintf("%s:%s.%s", t.project, t.dataset, t.name),
		TableReference:   &bq.TableReference{ProjectId: t.project, DatasetId: t.dataset, TableId: t.name},
		Schema:           &bq.TableSchema{Fields: fields},
		Labels:           t.spec.Labels,
		Description:      t.spec.Description,
		Etag:             t.etag(),
		Type:             "TABLE",
		Location:         "US",
		CreationTime:     t.created.UnixMilli(),
		LastModifiedTime: uint64(t.modified.UnixMilli()),
	}
	if t.spec.ViewQuery != "" {
		res.Type = "VIEW"
		res.View = &bq.ViewDefinition{Query: t.spec.ViewQuery}
	}
	if tp := t.spec.TimePartitioning; tp != nil {
		typ := string(tp.Type)
		if typ == "" {
			typ = string(bigquery.DayPartitioningType)
		}
		res.TimePartitioning = &bq.TimePartitioning{Type: typ, Field: tp.Field, ExpirationMs: tp.Expiration.Milliseconds()}
	}
	if c := t.spec.Clustering; c != nil {
		res.Clustering = &bq.Clustering{Fields: c.Fields}
	}
	return json.Marshal(res)
}

// storageSchema is the table schema in the Storage Write API's form, as
// GetWriteStream reports it. managedwriter's adapter wants the legacy type
// names.
func storageSchema(s bigquery.Schema) (*storagepb.TableSchema, error) {
	return adapt.BQSchemaToStorageTableSchema(bqschema.LegacyNames(s))
}

// writeError answers in BigQuery's error format, which the client library
// turns into a *googleapi.Error with Code and Errors[].Reason.
func writeError(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code":    code,
		"message": msg,
		"errors":  []map[string]string{{"message": msg, "domain": "global", "reason": reason}},
		"status":  statusName(code),
	}})
}

func statusName(code int) string {
	switch code {
	case http.StatusForbidden:
		return "PERMISSION_DENIED" // HTTP 403's canonical status, e.g. with rateLimitExceeded
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusPreconditionFailed:
		return "FAILED_PRECONDITION"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	}
	if code >= 500 {
		return "INTERNAL"
	}
	return "INVALID_ARGUMENT"
}
