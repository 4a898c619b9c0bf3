package fakebq

import (
	"encoding/json"
	"fmt"
	"net/http"

	"cloud.google.com/go/bigquery"
	bq "google.golang.org/api/bigquery/v2"
)

// Queries the fake answers: it runs no SQL, but a benchmark of compaction's
// metadata phase needs the one query that phase makes (the append
// ledger's) answered, over REST, as BigQuery answers it. AnswerQueries
// installs a function that recognises such statements and gives their
// rows; jobs.query (the client library's fast path) and jobs.insert plus
// jobs.getQueryResults both serve them. Values are given as BigQuery's
// REST API writes them: strings, a TIMESTAMP as microseconds since the
// epoch (the client asks for int64 timestamps).

// QueryFunc answers a statement: its result's schema and rows, or false
// when it does not know the statement (which is then refused, unless it is
// DDL).
type QueryFunc func(sql string) (schema bigquery.Schema, rows [][]string, ok bool)

// AnswerQueries installs f (nil: none).
func (s *Server) AnswerQueries(f QueryFunc) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

// answered runs the installed QueryFunc on sql.
func (s *Server) answered(sql string) (*bq.TableSchema, []*bq.TableRow, bool, error) {
	s.mu.RLock()
	f := s.answer
	s.mu.RUnlock()
	if f == nil {
		return nil, nil, false, nil
	}
	sch, rows, ok := f(sql)
	if !ok {
		return nil, nil, false, nil
	}
	fieldsJSON, err := sch.ToJSONFields()
	if err != nil {
		return nil, nil, false, err
	}
	var fields []*bq.TableFieldSchema
	if err := json.Unmarshal(fieldsJSON, &fields); err != nil {
		return nil, nil, false, err
	}
	out := make([]*bq.TableRow, len(rows))
	for i, r := range rows {
		row := &bq.TableRow{F: make([]*bq.TableCell, len(r))}
		for j, v := range r {
			row.F[j] = &bq.TableCell{V: v}
		}
		out[i] = row
	}
	return &bq.TableSchema{Fields: fields}, out, true, nil
}

// answeredJob records a done query job with its rows, for jobs.get and
// jobs.getQueryResults.
func (s *Server) answeredJob(project, query string, schema *bq.TableSchema, rows []*bq.TableRow) *bq.Job {
	id := fmt.Sprintf("fakebq-query-%d", s.jobSeq.Add(1))
	job := &bq.Job{
		Kind:          "bigquery#job",
		Id:            project + ":" + id,
		JobReference:  &bq.JobReference{ProjectId: project, JobId: id},
		Configuration: &bq.JobConfiguration{Query: &bq.JobConfigurationQuery{Query: query}},
		Status:        &bq.JobStatus{State: "DONE"},
		Statistics:    &bq.JobStatistics{Query: &bq.JobStatistics2{StatementType: "SELECT"}},
	}
	s.mu.Lock()
	if s.jobs == nil {
		s.jobs = map[string]*bq.Job{}
	}
	if s.results == nil {
		s.results = map[string]*bq.GetQueryResultsResponse{}
	}
	s.jobs[project+"/"+id] = job
	s.results[project+"/"+id] = &bq.GetQueryResultsResponse{Kind: "bigquery#getQueryResultsResponse", JobComplete: true,
		JobReference: job.JobReference, Schema: schema, Rows: rows, TotalRows: uint64(len(rows))}
	s.mu.Unlock()
	return job
}

// query answers jobs.query: an answered statement with its rows at once.
func (s *Server) query(w http.ResponseWriter, r *http.Request, project string) {
	var req bq.QueryRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "fakebq: decoding the query: "+err.Error())
		return
	}
	schema, rows, ok, err := s.answered(req.Query)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "backendError", "fakebq: "+err.Error())
		return
	}
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid", "fakebq runs no SQL and has no answer for: "+firstLine(withoutLeadingComments(req.Query)))
		return
	}
	job := s.answeredJob(project, req.Query, schema, rows)
	writeJSON(w, &bq.QueryResponse{Kind: "bigquery#queryResponse", JobComplete: true, JobReference: job.JobReference,
		Schema: schema, Rows: rows, TotalRows: uint64(len(rows))})
}

// queryResults answers jobs.getQueryResults of job id.
func (s *Server) queryResults(w http.ResponseWriter, project, id string) {
	s.mu.RLock()
	res := s.results[project+"/"+id]
	job := s.jobs[project+"/"+id]
	s.mu.RUnlock()
	switch {
	case res != nil:
		writeJSON(w, res)
	case job != nil:
		writeJSON(w, &bq.GetQueryResultsResponse{Kind: "bigquery#getQueryResultsResponse", JobComplete: true, JobReference: job.JobReference, Schema: &bq.TableSchema{}})
	default:
		writeError(w, http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Job %s:%s", project, id))
	}
}
