// Package registryserver is a small in-memory Confluent-compatible Schema
// Registry for the local stack and tests. It serves what Debezium's
// AvroConverter, srclient and hamba's registry client call: register a schema
// under a subject (the same schema gets the same id everywhere), look a schema
// up under a subject, fetch a schema by id, list subjects and versions, and
// read the latest or a given version. Schemas are validated as Avro and
// compared in canonical form.
package registryserver

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
)

type schemaEntry struct {
	id        int
	text      string // as registered
	canonical string
}

type version struct {
	version int
	schema  *schemaEntry
}

// Server is an http.Handler; it is safe for concurrent use.
type Server struct {
	mu          sync.Mutex
	byID        map[int]*schemaEntry
	byCanonical map[string]*schemaEntry
	subjects    map[string][]version
	failNext    int // fault injection: answer this many requests with 503
}

// FailNext makes the next n requests fail with 503 Service Unavailable, as an
// overloaded registry would. Tests use it to check that transient registry
// failures are retried, never dead-lettered.
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	s.failNext = n
	s.mu.Unlock()
}

// New returns an empty registry.
func New() *Server {
	return &Server{byID: map[int]*schemaEntry{}, byCanonical: map[string]*schemaEntry{}, subjects: map[string][]version{}}
}

// Register adds schema text under subject and returns its id, as the HTTP API
// does. It lets a process seed the registry without a round trip.
func (s *Server) Register(subject, text string) (int, error) {
	canonical, err := canonicalForm(text)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.register(subject, text, canonical).id, nil
}

func canonicalForm(text string) (string, error) {
	sch, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return "", err
	}
	return sch.String(), nil
}

func (s *Server) register(subject, text, canonical string) *schemaEntry {
	e, ok := s.byCanonical[canonical]
	if !ok {
		e = &schemaEntry{id: len(s.byID) + 1, text: text, canonical: canonical}
		s.byID[e.id] = e
		s.byCanonical[canonical] = e
	}
	for _, v := range s.subjects[subject] {
		if v.schema == e {
			return e
		}
	}
	s.subjects[subject] = append(s.subjects[subject], version{version: len(s.subjects[subject]) + 1, schema: e})
	return e
}

type apiError struct {
	status, code int
	msg          string
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, e apiError) {
	writeJSON(w, e.status, map[string]any{"error_code": e.code, "message": e.msg})
}

var (
	errSubjectNotFound = func(s string) apiError { return apiError{404, 40401, "Subject '" + s + "' not found."} }
	errVersionNotFound = apiError{404, 40402, "Version not found."}
	errSchemaNotFound  = apiError{404, 40403, "Schema not found"}
)

type schemaRequest struct {
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType"`
	References []any  `json:"references"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	failing := s.failNext > 0
	if failing {
		s.failNext--
	}
	s.mu.Unlock()
	if failing {
		fail(w, apiError{503, 50301, "injected failure: registry unavailable"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "subjects":
		s.mu.Lock()
		names := make([]string, 0, len(s.subjects))
		for n := range s.subjects {
			names = append(names, n)
		}
		s.mu.Unlock()
		sort.Strings(names)
		writeJSON(w, 200, names)
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "config":
		writeJSON(w, 200, map[string]string{"compatibilityLevel": "BACKWARD"})
	case len(parts) >= 3 && parts[0] == "schemas" && parts[1] == "ids" && r.Method == http.MethodGet:
		s.schemaByID(w, parts[2:])
	case len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions" && r.Method == http.MethodPost:
		s.registerHTTP(w, r, parts[1])
	case len(parts) == 2 && parts[0] == "subjects" && r.Method == http.MethodPost:
		s.lookup(w, r, parts[1])
	case len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions" && r.Method == http.MethodGet:
		s.mu.Lock()
		vs, ok := s.subjectVersions(w, parts[1])
		nums := make([]int, len(vs))
		for i, v := range vs {
			nums[i] = v.version
		}
		s.mu.Unlock()
		if ok {
			writeJSON(w, 200, nums)
		}
	case len(parts) == 4 && parts[0] == "subjects" && parts[2] == "versions" && r.Method == http.MethodGet:
		s.getVersion(w, parts[1], parts[3])
	default:
		fail(w, apiError{404, 404, "no such endpoint: " + r.Method + " " + r.URL.Path})
	}
}

func (s *Server) schemaByID(w http.ResponseWriter, rest []string) {
	id, err := strconv.Atoi(rest[0])
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if err != nil || !ok {
		fail(w, errSchemaNotFound)
		return
	}
	if len(rest) == 2 && rest[1] == "versions" {
		var out []map[string]any
		for subject, vs := range s.subjects {
			for _, v := range vs {
				if v.schema == e {
					out = append(out, map[string]any{"subject": subject, "version": v.version})
				}
			}
		}
		writeJSON(w, 200, out)
		return
	}
	writeJSON(w, 200, map[string]any{"schema": e.text})
}

func (s *Server) decode(w http.ResponseWriter, r *http.Request) (schemaRequest, string, bool) {
	var req schemaRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, apiError{422, 42201, "Invalid request body: " + err.Error()})
		return req, "", false
	}
	if req.SchemaType != "" && req.SchemaType != "AVRO" {
		fail(w, apiError{422, 42201, "Only AVRO schemas are supported by this registry, not " + req.SchemaType})
		return req, "", false
	}
	canonical, err := canonicalForm(req.Schema)
	if err != nil {
		fail(w, apiError{422, 42201, "Invalid schema: " + err.Error()})
		return req, "", false
	}
	return req, canonical, true
}

func (s *Server) registerHTTP(w http.ResponseWriter, r *http.Request, subject string) {
	req, canonical, ok := s.decode(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	e := s.register(subject, req.Schema, canonical)
	s.mu.Unlock()
	writeJSON(w, 200, map[string]int{"id": e.id})
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request, subject string) {
	_, canonical, ok := s.decode(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, ok := s.subjectVersions(w, subject)
	if !ok {
		return
	}
	for _, v := range vs {
		if v.schema.canonical == canonical {
			writeJSON(w, 200, versionJSON(subject, v))
			return
		}
	}
	fail(w, errSchemaNotFound)
}

func (s *Server) getVersion(w http.ResponseWriter, subject, which string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, ok := s.subjectVersions(w, subject)
	if !ok {
		return
	}
	if which == "latest" || which == "-1" {
		writeJSON(w, 200, versionJSON(subject, vs[len(vs)-1]))
		return
	}
	n, err := strconv.Atoi(which)
	if err != nil || n < 1 || n > len(vs) {
		fail(w, errVersionNotFound)
		return
	}
	writeJSON(w, 200, versionJSON(subject, vs[n-1]))
}

// subjectVersions returns subject's versions, oldest first, or answers 404
// (subject not found) and false. The caller holds s.mu.
func (s *Server) subjectVersions(w http.ResponseWriter, subject string) ([]version, bool) {
	vs, ok := s.subjects[subject]
	if !ok {
		fail(w, errSubjectNotFound(subject))
	}
	return vs, ok
}

func versionJSON(subject string, v version) map[string]any {
	return map[string]any{"subject": subject, "version": v.version, "id": v.schema.id, "schema": v.schema.text}
}
