package fakebq

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	bq "google.golang.org/api/bigquery/v2"
)

// DDL jobs: `bqcdc apply` creates each flow's table functions with
// CREATE OR REPLACE TABLE FUNCTION statements, which cost nothing and
// return no rows. The fake accepts such DDL (any statement starting with
// CREATE) as a job that is done at once, remembers the statements (DDL),
// and answers the two reads the client library makes to wait for it
// (jobs.getQueryResults and jobs.get). Any other query is refused: the fake
// runs no SQL.
//
// A job may also be a script of several CREATE statements, so that apply
// can create many functions with one jobs.insert (and one jobs.get, one
// jobs.getQueryResults) instead of one job each, which is what the
// per-method quota makes expensive. The fake does not parse SQL, so it
// recognises one separator only, the one bqcdc writes: a semicolon ending
// a line, followed by a blank line (";\n\n"; the semicolon may be on a line
// of its own). Such a job reports StatementType SCRIPT, as BigQuery does,
// and each statement is recorded in DDL separately, without its closing
// semicolon; if any statement is not a CREATE, the whole job is refused.
// A ";\n\n" inside a statement (in a comment or a string) would split it.
// What the statements make and need is modelled (ddl.go).

// scriptSeparator ends a statement of a script (see above).
const scriptSeparator = ";\n\n"

// DDL returns the DDL statements run so far, in order.
func (s *Server) DDL() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.ddl...)
}

// serveJobs answers jobs.insert, jobs.get and jobs.getQueryResults,
// reporting whether it did. parts is the request path split at '/'.
func (h restHandler) serveJobs(w http.ResponseWriter, r *http.Request, parts []string) bool {
	if len(parts) < 3 || parts[0] != "projects" || (parts[2] != "jobs" && parts[2] != "queries") {
		return false
	}
	project := parts[1]
	switch {
	case len(parts) == 3 && parts[2] == "jobs" && r.Method == http.MethodPost:
		h.s.insertJob(w, r, project)
	case len(parts) == 4 && parts[2] == "jobs" && r.Method == http.MethodGet:
		h.s.getJob(w, project, parts[3], func(j *bq.Job) any { return j })
	case len(parts) == 4 && parts[2] == "queries" && r.Method == http.MethodGet:
		h.s.queryResults(w, project, parts[3])
	case len(parts) == 3 && parts[2] == "queries" && r.Method == http.MethodPost:
		h.s.query(w, r, project)
	default:
		return false
	}
	return true
}

func (s *Server) insertJob(w http.ResponseWriter, r *http.Request, project string) {
	var job bq.Job
	if err := json.NewDecoder(r.Body).Decode(&job); err != nil || job.Configuration == nil || job.Configuration.Query == nil {
		writeError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("fakebq: only query jobs are served (decoding: %v)", err))
		return
	}
	if schema, rows, ok, err := s.answered(job.Configuration.Query.Query); err != nil || ok {
		if err != nil {
			writeError(w, http.StatusInternalServerError, "backendError", "fakebq: "+err.Error())
			return
		}
		writeJSON(w, s.answeredJob(project, job.Configuration.Query.Query, schema, rows))
		return
	}
	stmts := statements(strings.TrimSpace(job.Configuration.Query.Query))
	if len(stmts) == 0 {
		stmts = []string{""}
	}
	for _, q := range stmts {
		if stmt := withoutLeadingComments(q); !ddlLike(stmt) {
			writeError(w, http.StatusBadRequest, "invalid", "fakebq runs no SQL, only CREATE, INSERT and DROP statements (recorded, not run): "+firstLine(stmt))
			return
		}
	}
	statementType := "CREATE_TABLE_FUNCTION"
	if len(stmts) > 1 {
		statementType = "SCRIPT"
	}
	if job.JobReference == nil {
		job.JobReference = &bq.JobReference{}
	}
	if job.JobReference.JobId == "" {
		job.JobReference.JobId = fmt.Sprintf("fakebq-ddl-%d", s.jobSeq.Add(1))
	}
	job.JobReference.ProjectId = project
	job.Id = project + ":" + job.JobReference.JobId
	job.Kind = "bigquery#job"
	job.Status = &bq.JobStatus{State: "DONE"}
	job.Statistics = &bq.JobStatistics{Query: &bq.JobStatistics2{StatementType: statementType}}
	s.mu.Lock()
	// The statements take effect first: a failed one fails the job's
	// insert, as BigQuery fails a DDL job whose statement it cannot
	// analyse (ddl.go).
	if e := s.runDDL(stmts, project); e != nil {
		s.mu.Unlock()
		writeError(w, e.code, e.reason, e.msg)
		return
	}
	if s.jobs == nil {
		s.jobs = map[string]*bq.Job{}
	}
	s.jobs[project+"/"+job.JobReference.JobId] = &job
	s.ddl = append(s.ddl, stmts...)
	s.mu.Unlock()
	writeJSON(w, &job)
}

func (s *Server) getJob(w http.ResponseWriter, project, id string, answer func(*bq.Job) any) {
	s.mu.RLock()
	job := s.jobs[project+"/"+id]
	s.mu.RUnlock()
	if job == nil {
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Job %s:%s", project, id))
		return
	}
	writeJSON(w, answer(job))
}

// statements splits q, trimmed, at scriptSeparator: a query without one
// is one statement, kept as written; a script's statements lose their
// closing semicolons, and those that are only comments are dropped.
func statements(q string) []string {
	if !strings.Contains(q, scriptSeparator) {
		return []string{q}
	}
	var out []string
	for _, stmt := range strings.Split(q, scriptSeparator) {
		stmt = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(stmt), ";"))
		if withoutLeadingComments(stmt) != "" {
			out = append(out, stmt)
		}
	}
	return out
}

// withoutLeadingComments drops the -- comment lines and blank lines a
// statement starts with.
func withoutLeadingComments(q string) string {
	for {
		q = strings.TrimSpace(q)
		if !strings.HasPrefix(q, "--") {
			return q
		}
		i := strings.IndexByte(q, '\n')
		if i < 0 {
			return ""
		}
		q = q[i+1:]
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ddlLike reports whether the fake accepts stmt as a job that is done at
// once and recorded: CREATE and DROP (DDL), and INSERT, which apply uses
// to write the flows table of the status view from literals.
func ddlLike(stmt string) bool {
	u := strings.ToUpper(stmt)
	return strings.HasPrefix(u, "CREATE ") || strings.HasPrefix(u, "INSERT ") || strings.HasPrefix(u, "DROP ")
}
