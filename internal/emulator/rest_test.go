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
	rec := replyTo(http.StatusInternalServerError, `{"error":{"code":500,"message":"failed to sync catalog: sqlite3: database is locked"}}`)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "backendError") {
		t.Errorf("got %d %s, want 503 backendError", rec.Code, rec.Body)
	}
}

func TestOtherErrorsPassThrough(t *testing.T) {
	rec := replyTo(http.StatusBadRequest, `{"error":{"code":400,"message":"Unrecognized name: x"}}`)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Unrecognized name") {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}

// replyTo is what a client of WrapREST gets for a query the emulator
// answers with code and body.
func replyTo(code int, body string) *httptest.ResponseRecorder {
	h := WrapREST(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/bigquery/v2/projects/p/queries", strings.NewReader(`{}`)))
	return rec
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
