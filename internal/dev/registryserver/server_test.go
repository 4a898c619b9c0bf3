package registryserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/registryserver"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/hamba/avro/v2"
	"github.com/riferrei/srclient"
)

const v1 = `{"type":"record","name":"R","namespace":"t","fields":[{"name":"id","type":"int"}]}`
const v2 = `{"type":"record","name":"R","namespace":"t","fields":[{"name":"id","type":"int"},{"name":"x","type":["null","string"],"default":null}]}`

// The fake is exercised through the real client library (srclient) and
// through bqcdc's registry package, as the ingest function uses it.
func TestRegistryWithSrclient(t *testing.T) {
	ts := httptest.NewServer(registryserver.New())
	defer ts.Close()
	sr := srclient.NewSchemaRegistryClient(ts.URL)
	sr.CachingEnabled(false)

	s1, err := sr.CreateSchema("t-value", v1, srclient.Avro)
	if err != nil {
		t.Fatal(err)
	}
	// Same schema, different whitespace: same id, no new version.
	again, err := sr.CreateSchema("t-value", "{ \"type\": \"record\", \"name\": \"R\", \"namespace\":\"t\", \"fields\":[{\"name\":\"id\",\"type\":\"int\"}]}", srclient.Avro)
	if err != nil || again.ID() != s1.ID() {
		t.Fatalf("re-register: id %v err %v, want id %d", again, err, s1.ID())
	}
	s2, err := sr.CreateSchema("t-value", v2, srclient.Avro)
	if err != nil || s2.ID() == s1.ID() {
		t.Fatalf("v2: %v %v", s2, err)
	}
	latest, err := sr.GetLatestSchema("t-value")
	if err != nil || latest.ID() != s2.ID() || latest.Version() != 2 {
		t.Fatalf("latest = %+v, %v", latest, err)
	}
	versions, err := sr.GetSchemaVersions("t-value")
	if err != nil || len(versions) != 2 {
		t.Fatalf("versions = %v %v", versions, err)
	}
	// Another subject registering the same schema shares the id.
	other, err := sr.CreateSchema("u-value", v1, srclient.Avro)
	if err != nil || other.ID() != s1.ID() {
		t.Fatalf("shared id: %v %v", other, err)
	}
	subjects, err := sr.GetSubjects()
	if err != nil || len(subjects) != 2 {
		t.Fatalf("subjects = %v %v", subjects, err)
	}
	byID, err := sr.GetSchema(s1.ID())
	if err != nil || byID.Schema() != v1 {
		t.Fatalf("by id = %v %v", byID, err)
	}
	if _, err := sr.CreateSchema("bad-value", `{"type":"record"}`, srclient.Avro); err == nil {
		t.Error("invalid schema accepted")
	}
	if _, err := sr.LookupSchema("t-value", v1, srclient.Avro); err != nil {
		t.Errorf("lookup: %v", err)
	}
}

func TestClientClassifiesAndCaches(t *testing.T) {
	reg := registryserver.New()
	id, err := reg.Register("t-value", v1)
	if err != nil {
		t.Fatal(err)
	}
	var hits, failures atomic.Int32
	failures.Store(1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if failures.Add(-1) >= 0 {
			http.Error(w, `{"error_code":50001,"message":"backend down"}`, http.StatusInternalServerError)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c := registry.New(ts.URL, registry.Options{Timeout: 2 * time.Second})
	ctx := context.Background()

	if _, err := c.Schema(ctx, id); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("5xx: err = %v, want ErrUnavailable", err)
	}
	s, err := c.Schema(ctx, id)
	if err != nil || s.(*avro.RecordSchema).FullName() != "t.R" {
		t.Fatalf("second try: %v %v", s, err)
	}
	before := hits.Load()
	if _, err := c.Schema(ctx, id); err != nil || hits.Load() != before {
		t.Errorf("cached lookup made %d requests (err %v)", hits.Load()-before, err)
	}
	if _, err := c.Schema(ctx, 999); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("unknown id: err = %v, want ErrNotFound", err)
	}
	dead := registry.New("http://127.0.0.1:1", registry.Options{Timeout: time.Second})
	if _, err := dead.Schema(ctx, 1); !errors.Is(err, registry.ErrUnavailable) {
		t.Errorf("refused connection: err = %v, want ErrUnavailable", err)
	}
	if got, err := c.Register(ctx, "t-value", v2); err != nil || got == id {
		t.Errorf("register v2 = %d, %v", got, err)
	}
	if latestID, _, err := c.Latest(ctx, "t-value"); err != nil || latestID == id {
		t.Errorf("latest = %d, %v", latestID, err)
	}
}
