package ingest

import (
	"context"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

// TestReasonsWithholdRowValues: a value the changelog cannot hold is named
// by its column and the kind of problem in the dead letter; the value
// itself only when the operator opts in (Options.LogValues). The bytes
// are kept either way.
func TestReasonsWithholdRowValues(t *testing.T) {
	{
		for _, values := range []bool{false, true} {
			svc, tables, s := newServiceWith(t, nil, Options{LogValues: values})
			data := customerWith(t, s, "updated_at", "yesterday at noon")
			got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "v", Data: data})
			if got != DeadLettered || err != nil {
				t.Fatalf("Handle = %v, %v", got, err)
			}
			dl := tables.rows[catalog.DeadLetterTable][0]
			reason := dl["reason"].(string)
			if dl["stage"] != string(failure.StageConvert) || !strings.Contains(reason, `"updated_at"`) || !strings.Contains(reason, "parsing zoned timestamp") {
				t.Errorf("values=%v: dead letter %v; want stage convert naming the column and the problem", values, dl)
			}
			if quoted := strings.Contains(reason, "yesterday"); quoted != values {
				t.Errorf("values=%v: reason %q quotes the value: %v", values, reason, quoted)
			}
			if !values && !strings.Contains(reason, failure.Withheld) {
				t.Errorf("reason %q lacks the placeholder", reason)
			}
			if string(dl["data"].([]byte)) != string(data) {
				t.Error("the dead letter lost the message's bytes")
			}
		}
	}
}

// customerWith is customerMessage(c, 1) with one row field set.
func customerWith(t *testing.T, s avro.Schema, field string, v any) []byte {
	t.Helper()
	row := map[string]any{"id": 1, "first_name": "Ann", "last_name": "Lee", "email": "a@x", "tier": nil, "balance": nil, "birth_date": nil, "updated_at": nil}
	row[field] = v
	rec := map[string]any{"op": "c", "ts_ms": nil, "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil,
		"after": map[string]any{customers + ".Value": row},
		"source": map[string]any{"version": "2", "connector": "mysql", "name": "db", "ts_ms": int64(1000), "snapshot": "false", "db": "inventory",
			"sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1), "gtid": nil, "file": "mysql-bin.000001",
			"pos": int64(101), "row": 0, "thread": nil, "query": nil}}
	b, err := avro.Config{}.Freeze().Marshal(s, rec)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Append(nil, 1, b)
}
