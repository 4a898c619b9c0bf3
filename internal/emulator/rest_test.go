package emulator

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLockedBecomesUnavailable(t *testing.T) {
	h := WrapREST(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"code":500,"message":"failed to sync catalog: sqlite3: database is locked"}}`)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/bigquery/v2/projects/p/queries", strings.NewReader(`{}`)))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "backendError") {
		t.Errorf("got %d %s, want 503 backendError", rec.Code, rec.Body)
	}
}

func TestOtherErrorsPassThrough(t *testing.T) {
	h := WrapREST(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":400,"message":"Unrecognized name: x"}}`)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/bigquery/v2/projects/p/queries", strings.NewReader(`{}`)))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Unrecognized name") {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}

func TestTablesAreCreatedWithFloat64(t *testing.T) {
	var got map[string]any
	h := WrapREST(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		w.WriteHeader(http.StatusOK)
	}))
	body := `{"tableReference":{"tableId":"t"},"schema":{"fields":[{"name":"f","type":"FLOAT"},{"name":"r","type":"RECORD","fields":[{"name":"g","type":"FLOAT"},{"name":"s","type":"STRING"}]}]}}`
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/bigquery/v2/projects/p/datasets/d/tables", strings.NewReader(body)))
	b, _ := json.Marshal(got["schema"])
	want := `{"fields":[{"name":"f","type":"FLOAT64"},{"fields":[{"name":"g","type":"FLOAT64"},{"name":"s","type":"STRING"}],"name":"r","type":"RECORD"}]}`
	if string(b) != want {
		t.Errorf("schema reached the emulator as\n%s\nwant\n%s", b, want)
	}
}
