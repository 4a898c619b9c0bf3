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
		h.s.getJob(w, project, parts[3], func(j *bq.Job) any {
			return &bq.GetQueryResultsResponse{Kind: "bigquery#getQueryResultsResponse", JobComplete: true, JobReference: j.JobReference, Schema: &bq.TableSchema{}}
		})
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
	q := strings.TrimSpace(job.Configuration.Query.Query)
	if stmt := withoutLeadingComments(q); !strings.HasPrefix(strings.ToUpper(stmt), "CREATE ") {
		writeError(w, http.StatusBadRequest, "invalid", "fakebq runs no SQL, only CREATE statements (DDL): "+firstLine(stmt))
		return
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
	job.Statistics = &bq.JobStatistics{Query: &bq.JobStatistics2{StatementType: "CREATE_TABLE_FUNCTION"}}
	s.mu.Lock()
	if s.jobs == nil {
		s.jobs = map[string]*bq.Job{}
	}
	s.jobs[project+"/"+job.JobReference.JobId] = &job
	s.ddl = append(s.ddl, q)
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
