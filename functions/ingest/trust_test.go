package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/formats"
)

// TestSchemaOfAnotherProjectIsDeadLettered: googclient_schemaname is an
// attribute any publisher sets. A name in another project than the
// deployment's is dead-lettered at stage registry at once; fetching it
// would fail with PermissionDenied and be retried until Pub/Sub gives up.
// (The Pub/Sub endpoint here answers nothing: a fetch would be retried.)
func TestSchemaOfAnotherProjectIsDeadLettered(t *testing.T) {
	fake := fakebq.Start(t, fakebq.Options{})
	const topic = "db.inv.t"
	if err := fake.AddTable("cdc", catalog.TableName(topic), fakebq.Table{Columns: catalog.MetadataColumns()}); err != nil {
		t.Fatal(err)
	}
	if err := fake.AddTable("cdc", catalog.DeadLetterTable, fakebq.Table{Columns: catalog.DeadLetterColumns()}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg := config.Config{BigQuery: fake.ClientConfig(), Dataset: "cdc", PubSubEndpoint: "127.0.0.1:1"}
	fn, err := New(context.Background(), cfg, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var push PushBody
	push.Message.MessageID = "1"
	push.Message.Data = []byte{2, 4}
	push.Message.Attributes = map[string]string{
		formats.AttrSchemaName:     "projects/someone-else/schemas/s",
		formats.AttrSchemaRevision: "r1",
		formats.AttrSchemaEncoding: formats.EncodingBinary,
	}
	body, _ := json.Marshal(push)
	w := httptest.NewRecorder()
	fn.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/projects/"+fake.Project()+"/topics/"+topic, bytes.NewReader(body)))
	if w.Code != http.StatusNoContent {
		t.Fatalf("status %d (%s), want 204: dead-lettered, not retried", w.Code, w.Body)
	}
	if n := fake.Stats("cdc", catalog.DeadLetterTable).Stored; n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
	if l := logs.String(); !strings.Contains(l, "stage=registry") || !strings.Contains(l, "not in a project this function reads schemas from") {
		t.Errorf("logs:\n%s", l)
	}
}
