package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// replaceTable handles CREATE OR REPLACE TABLE t AS <query> (concession
// 16). BigQuery replaces t atomically, and the query may read t itself (a
// materialized view's refresh reads its state to write it). The emulator
// refuses to replace a table that exists ("table is already created") and
// would drop t before reading it. So the shim writes the query's result
// aside, drops t, creates t from it and drops the copy, then lets the
// original request through as a query of nothing, so the client gets the
// job it waits for. A CLUSTER BY clause is dropped (the emulator does not
// cluster). Not atomic: a crash in between loses t, which only a
// test could see.
var createOrReplace = regexp.MustCompile(`(?is)^\s*(?:--[^\n]*\n\s*)*CREATE\s+OR\s+REPLACE\s+TABLE\s+` +
	"`([^`]+)`\\.`([^`]+)`\\.`([^`]+)`" + `(?:\s+CLUSTER\s+BY\s+[^\n]+?)?\s+AS\s+(.*)$`)

var queryPath = regexp.MustCompile(`^(?:/bigquery/v2)?/projects/([^/]+)/(queries|jobs)$`)

// replaceTable reports whether it handled r (writing the response).
func (s *schemaShim) replaceTable(w http.ResponseWriter, r *http.Request) bool {
	m := queryPath.FindStringSubmatch(r.URL.Path)
	if m == nil || methodOf(r) != http.MethodPost || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var req map[string]any
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	// jobs.query holds the SQL at "query", jobs.insert at
	// configuration.query.query.
	holder := req
	if m[2] == "jobs" {
		cfg, _ := req["configuration"].(map[string]any)
		holder, _ = cfg["query"].(map[string]any)
	}
	sql, _ := holder["query"].(string)
	q := createOrReplace.FindStringSubmatch(sql)
	if q == nil {
		return false
	}
	project, dataset, table, query := q[1], q[2], q[3], q[4]
	aside := table + "__bqcdc_replacing"
	name := func(t string) string { return "`" + project + "`.`" + dataset + "`.`" + t + "`" }
	s.mu.Lock()
	err = s.replaceWith(project, dataset, table, aside, name, query)
	s.mu.Unlock()
	if err != nil {
		writeShimError(w, fmt.Errorf("local BigQuery replace shim: %w", err))
		return true
	}
	holder["query"] = "SELECT 1 AS replaced"
	nb, _ := json.Marshal(req)
	r.Body = io.NopCloser(bytes.NewReader(nb))
	r.ContentLength = int64(len(nb))
	s.next.ServeHTTP(w, r)
	return true
}

func (s *schemaShim) replaceWith(project, dataset, table, aside string, name func(string) string, query string) error {
	_ = s.ok(http.MethodDelete, s.tableURL(project, dataset, aside), nil) // a copy a failed replace left
	if err := s.query(project, "CREATE TABLE "+name(aside)+" AS "+strings.TrimRight(strings.TrimSpace(query), ";")); err != nil {
		return fmt.Errorf("writing the new %s aside: %w", table, err)
	}
	var cur map[string]any
	if code, err := s.call(http.MethodGet, s.tableURL(project, dataset, table), nil, &cur); err == nil && code == http.StatusOK {
		if err := s.ok(http.MethodDelete, s.tableURL(project, dataset, table), nil); err != nil {
			return fmt.Errorf("dropping %s: %w", table, err)
		}
	}
	if err := s.query(project, "CREATE TABLE "+name(table)+" AS SELECT * FROM "+name(aside)); err != nil {
		return fmt.Errorf("creating %s from its new rows: %w", table, err)
	}
	if labels, ok := cur["labels"].(map[string]any); ok && len(labels) > 0 {
		if err := s.ok(http.MethodPatch, s.tableURL(project, dataset, table), map[string]any{"labels": labels}); err != nil {
			return fmt.Errorf("labelling %s again: %w", table, err)
		}
	}
	return s.ok(http.MethodDelete, s.tableURL(project, dataset, aside), nil)
}
