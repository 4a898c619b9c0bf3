// Package loadgen produces synthetic Debezium traffic and measures what
// lands: it is how `bqcdc loadgen` sizes a deployment, locally or against a
// real project.
//
// A Spec describes the load: how many source tables, how many messages per
// table, over how many keys, how wide each row is, and whether the messages
// are published at a steady rate or all at once (a burst, as a Debezium
// initial snapshot sends). Each table is a MySQL Debezium topic whose row
// carries an id, a run id (so a measurement counts only its own run), and
// Width string columns of ValueBytes bytes. The first message of a key is a
// snapshot read, later ones are updates, in binlog order.
//
// Measure reads the changelogs: how many of the run's messages landed, when,
// and the latency from Pub/Sub publish time to the append
// (_cdc_ingested_at - _cdc_publish_time; the row is queryable from then on
// with the Storage Write API's default stream).
package loadgen

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
)

// Spec is a load.
type Spec struct {
	Prefix     string  // topics are <Prefix>.t000, <Prefix>.t001, ...
	Tables     int     // source tables (topics)
	Messages   int     // messages per table
	Keys       int     // distinct keys per table (0: one per message)
	Width      int     // string columns per row
	ValueBytes int     // bytes per string value
	Rate       float64 // messages per second over all tables; 0 publishes everything at once
	Seed       uint64
}

// DefaultSpec is a small burst: 3 tables, 300 messages each.
func DefaultSpec() Spec {
	return Spec{Prefix: "loadgen.db", Tables: 3, Messages: 300, Width: 8, ValueBytes: 100}
}

// MaxMessages bounds a load's messages over all tables: a run keeps a
// few dozen bytes per message to match what landed, so 10^9 is tens of GB
// of memory already, and days of publishing at Pub/Sub's default quota.
const MaxMessages = 1_000_000_000

// Validate checks the spec's numbers.
func (s Spec) Validate() error {
	switch {
	case s.Tables < 1 || s.Tables > 10000:
		return fmt.Errorf("tables = %d: want 1 to 10000", s.Tables)
	case s.Messages < 1 || s.Messages > MaxMessages/s.Tables:
		return fmt.Errorf("messages = %d: want 1 to %d per table (%d over %d tables at most)", s.Messages, MaxMessages/s.Tables, MaxMessages, s.Tables)
	case math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0):
		return fmt.Errorf("rate = %v: want 0 (burst) or a positive, finite rate", s.Rate)
	case s.Keys < 0 || s.Width < 0 || s.Width > 1000 || s.ValueBytes < 0 || s.ValueBytes > 1<<20:
		return fmt.Errorf("keys, width (at most 1000) and value bytes (at most 1 MiB) must be non-negative")
	case s.Rate < 0:
		return fmt.Errorf("rate = %v: want 0 (burst) or a positive rate", s.Rate)
	case s.Prefix == "" || strings.ContainsAny(s.Prefix, "` \t\n"):
		return fmt.Errorf("prefix %q: want a topic name prefix without spaces or backquotes", s.Prefix)
	}
	return nil
}

// Topic is the topic of table i.
func (s Spec) Topic(i int) string { return fmt.Sprintf("%s.t%03d", s.Prefix, i) }

// Topics lists the topics.
func (s Spec) Topics() []string {
	out := make([]string, s.Tables)
	for i := range out {
		out[i] = s.Topic(i)
	}
	return out
}

func (s Spec) keys() int {
	if s.Keys <= 0 || s.Keys > s.Messages {
		return s.Messages
	}
	return s.Keys
}

// Schema is the Avro value schema of table i: a Debezium MySQL envelope.
func (s Spec) Schema(i int) string {
	fields := []any{
		map[string]any{"name": "id", "type": "long"},
		map[string]any{"name": "lg_run", "type": "string"},
	}
	for c := 0; c < s.Width; c++ {
		fields = append(fields, map[string]any{"name": fmt.Sprintf("c%03d", c), "type": []any{"null", "string"}, "default": nil})
	}
	value := map[string]any{"type": "record", "name": "Value", "namespace": s.avroNamespace(i), "fields": fields}
	source := map[string]any{"type": "record", "name": "Source", "namespace": "io.debezium.connector.mysql", "fields": []any{
		map[string]any{"name": "version", "type": "string"},
		map[string]any{"name": "connector", "type": "string"},
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "ts_ms", "type": "long"},
		map[string]any{"name": "snapshot", "type": []any{map[string]any{"type": "string", "connect.version": 1, "connect.parameters": map[string]any{"allowed": "true,last,false,incremental"}, "connect.default": "false", "connect.name": "io.debezium.data.Enum"}, "null"}, "default": "false"},
		map[string]any{"name": "db", "type": "string"},
		map[string]any{"name": "table", "type": []any{"null", "string"}, "default": nil},
		map[string]any{"name": "server_id", "type": "long"},
		map[string]any{"name": "file", "type": "string"},
		map[string]any{"name": "pos", "type": "long"},
		map[string]any{"name": "row", "type": "int"},
	}}
	env := map[string]any{"type": "record", "name": "Envelope", "namespace": s.avroNamespace(i), "connect.name": s.avroNamespace(i) + ".Envelope",
		"fields": []any{
			map[string]any{"name": "before", "type": []any{"null", value}, "default": nil},
			map[string]any{"name": "after", "type": []any{"null", "Value"}, "default": nil},
			map[string]any{"name": "source", "type": source},
			map[string]any{"name": "op", "type": "string"},
			map[string]any{"name": "ts_ms", "type": []any{"null", "long"}, "default": nil},
		}}
	b, _ := json.Marshal(env) // maps of strings and slices always marshal
	return string(b)
}

func (s Spec) avroNamespace(i int) string {
	return strings.NewReplacer(".", "_", "-", "_").Replace(s.Prefix) + fmt.Sprintf(".t%03d", i)
}

// Flows is one SCD type 1 flow per table, in the flow grammar.
func (s Spec) Flows() string {
	var b strings.Builder
	b.WriteString("-- Generated by bqcdc loadgen: one current-state flow per synthetic table.\n")
	for i := 0; i < s.Tables; i++ {
		fmt.Fprintf(&b, "CREATE FLOW lg_t%03d AS AUTO CDC INTO lg_t%03d\nFROM STREAM(%s)\nKEYS (id)\nAPPLY AS DELETE WHEN _cdc_op = 'd'\nSEQUENCE BY _cdc_sequence\nCOLUMNS * EXCEPT (_cdc_schema_id, _cdc_publish_time, _cdc_transaction)\nSTORED AS SCD TYPE 1;\n\n",
			i, i, catalog.QuoteIdent(s.Topic(i)))
	}
	return b.String()
}

// Message is one generated change event, before encoding.
type Message struct {
	Table  int
	Record map[string]any // the Debezium envelope
}

// Generate returns the messages of table t for run, in binlog order.
func (s Spec) Generate(t int, run string) []Message {
	r := rand.New(rand.NewPCG(s.Seed, uint64(t)))
	keys := s.keys()
	seen := make([]bool, keys)
	branch := s.avroNamespace(t) + ".Value" // hamba names a record's union branch by its full name
	out := make([]Message, s.Messages)
	value := func(id int64) map[string]any {
		row := map[string]any{"id": id, "lg_run": run}
		for c := 0; c < s.Width; c++ {
			row[fmt.Sprintf("c%03d", c)] = map[string]any{"string": randomText(r, s.ValueBytes)}
		}
		return row
	}
	for m := range out {
		k := m % keys
		op, snapshot := "u", "false"
		var before any
		if !seen[k] {
			op, snapshot = "r", "true"
			seen[k] = true
		} else {
			before = map[string]any{branch: value(int64(k))}
		}
		out[m] = Message{Table: t, Record: map[string]any{
			"before": before,
			"after":  map[string]any{branch: value(int64(k))},
			"source": map[string]any{"version": "2.7.0", "connector": "mysql", "name": s.Prefix, "ts_ms": time.Now().UnixMilli(),
				"snapshot": map[string]any{"string": snapshot}, "db": "loadgen", "table": map[string]any{"string": fmt.Sprintf("t%03d", t)},
				"server_id": int64(1), "file": "mysql-bin.000001", "pos": int64(4 + 100*m), "row": 0},
			"op":    op,
			"ts_ms": map[string]any{"long": time.Now().UnixMilli()},
		}}
	}
	return out
}

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "

func randomText(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

// ChangelogTable is the changelog of table i.
func (s Spec) ChangelogTable(i int) string { return catalog.TableName(s.Topic(i)) }

// Write writes the load's flows (dir/flows/loadgen.sql) and Avro value
// schemas (dir/schemas/<topic>-value.avsc), to apply before a run.
func (s Spec) Write(dir string) error {
	for _, sub := range []string{"flows", "schemas"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "flows", "loadgen.sql"), []byte(s.Flows()), 0o644); err != nil {
		return err
	}
	for i := range s.Tables {
		name := filepath.Join(dir, "schemas", catalog.Subject(s.Topic(i))+".avsc")
		if err := os.WriteFile(name, []byte(s.Schema(i)), 0o644); err != nil {
			return err
		}
	}
	return nil
}
