package compact

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// Against a BigQuery that refuses connections the function answers 503
// with the reason within the connect timeout (before: it retried until
// its request deadline), with the ledger and without.
func TestUnreachableAnswers503(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	flows, errs := flow.ParseDir(filepath.Join("..", "..", "sql", "flows"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, ledger := range []bool{true, false} {
		cfg := config.Config{BigQuery: clients.Config{Project: "p", Endpoint: "http://" + dead, StorageEndpoint: dead, ConnectTimeout: time.Second},
			Dataset: "cdc", VisibilityLag: time.Minute, CompactConcurrency: 2, AppendLedger: ledger}
		f, err := New(context.Background(), cfg, Options{Flows: flows, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		start := time.Now()
		f.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", nil))
		took := time.Since(start)
		var resp Response
		_ = json.Unmarshal(w.Body.Bytes(), &resp)
		if w.Code != http.StatusServiceUnavailable || !strings.Contains(resp.Error, "unreachable") {
			t.Errorf("ledger %v: %d %s, want 503 saying BigQuery is unreachable", ledger, w.Code, w.Body.String())
		}
		if took > 10*time.Second {
			t.Errorf("ledger %v: answered after %s, want about the 1 s connect timeout", ledger, took)
		}
	}
}
