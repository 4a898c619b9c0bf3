package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

// fakeRegistry serves parsed schemas by id.
type fakeRegistry struct {
	schemas map[int]avro.Schema
	err     error
}

func (f *fakeRegistry) Schema(_ context.Context, id int) (avro.Schema, error) {
	if f.err != nil {
		return nil, f.err
	}
	s, ok := f.schemas[id]
	if !ok {
		return nil, registry.ErrNotFound
	}
	return s, nil
}

// fakeTables encodes rows with the real encoder (so a row that would not
// fit fails as it would) and keeps them instead of appending.
type fakeTables struct {
	tables     map[string]*bqwrite.Table
	rows       map[string][]map[string]any
	evolutions int
	panicOn    string // AppendTo panics for this table (a bug anywhere in the pipeline)
	evolveErr  error  // Evolve fails with it (BigQuery refusing tables.update)
}

func newFakeTables(t testing.TB) *fakeTables {
	t.Helper()
	cols, err := apply.ChangelogColumns(string(customersAvsc(t)))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTables{tables: map[string]*bqwrite.Table{}, rows: map[string][]map[string]any{}}
	for name, schema := range map[string]bigquery.Schema{
		catalog.TableName("dbserver1.inventory.customers"): bqschema.ToBigQuery(cols),
		catalog.DeadLetterTable:                            bqschema.ToBigQuery(catalog.DeadLetterColumns()),
	} {
		enc, err := bqwrite.NewEncoder(schema)
		if err != nil {
			t.Fatal(err)
		}
		f.tables[name] = &bqwrite.Table{Name: name, Metadata: &bigquery.TableMetadata{Schema: schema}, Encoder: enc}
	}
	return f
}

func (f *fakeTables) Table(_ context.Context, name string) (*bqwrite.Table, error) {
	t, ok := f.tables[name]
	if !ok {
		return nil, bqwrite.ErrNoTable
	}
	return t, nil
}

func (f *fakeTables) Append(ctx context.Context, table string, rows []map[string]any) error {
	t, ok := f.tables[table]
	if !ok {
		return failure.Permanent(failure.StageTable, bqwrite.ErrNoTable)
	}
	return f.AppendTo(ctx, t, rows)
}

func (f *fakeTables) AppendTo(_ context.Context, t *bqwrite.Table, rows []map[string]any) error {
	table := t.Name
	if table == f.panicOn {
		var m map[string]int
		m["boom"]++ // assignment to entry in nil map
	}
	for _, r := range rows {
		if _, err := t.Encoder.Encode(r); err != nil {
			return failure.Permanent(failure.StageEncode, err)
		}
	}
	f.rows[table] = append(f.rows[table], rows...)
	return nil
}

// AppendEncoded keeps rows the compiled transcoder encoded, decoded back
// into canonical maps so tests read them as AppendTo's.
func (f *fakeTables) AppendEncoded(ctx context.Context, t *bqwrite.Table, rows [][]byte) error {
	maps := make([]map[string]any, len(rows))
	for i, b := range rows {
		var err error
		if maps[i], err = t.Encoder.Decode(b); err != nil {
			return failure.Permanent(failure.StageEncode, err)
		}
	}
	return f.AppendTo(ctx, t, maps)
}

// Evolve merges columns as bqwrite.Writer does, and returns a new table
// version (a new pointer, as a reopened stream would be).
func (f *fakeTables) Evolve(_ context.Context, t *bqwrite.Table, cols schema.Columns, labels map[string]string) (bqwrite.Evolution, error) {
	merged, added, err := evolve.Merge(bqschema.FromBigQuery(t.Metadata.Schema), cols)
	if err != nil {
		return bqwrite.Evolution{}, err
	}
	if f.evolveErr != nil && len(added) > 0 {
		return bqwrite.Evolution{}, fmt.Errorf("adding columns %s to table %s: %w", strings.Join(added, ", "), t.Name, f.evolveErr)
	}
	f.evolutions++
	md := *t.Metadata
	md.Schema = bqschema.ToBigQuery(merged)
	md.Labels = map[string]string{}
	for k, v := range t.Metadata.Labels {
		md.Labels[k] = v
	}
	for k, v := range labels {
		md.Labels[k] = v
	}
	enc, err := bqwrite.NewEncoder(md.Schema)
	if err != nil {
		return bqwrite.Evolution{}, err
	}
	nt := &bqwrite.Table{Name: t.Name, Metadata: &md, Encoder: enc}
	f.tables[t.Name] = nt
	return bqwrite.Evolution{Table: nt, Added: added}, nil
}

const customers = "dbserver1.inventory.customers"

func customerMessage(t testing.TB, s avro.Schema, op string, id int) []byte {
	t.Helper()
	row := map[string]any{"id": id, "first_name": "Ann", "last_name": "Lee", "email": "a@x", "tier": nil, "balance": nil, "birth_date": nil, "updated_at": nil}
	rec := map[string]any{"op": op, "ts_ms": nil, "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil, "after": nil,
		"source": map[string]any{"version": "2", "connector": "mysql", "name": "db", "ts_ms": int64(1000), "snapshot": "false", "db": "inventory",
			"sequence": nil, "ts_us": nil, "ts_ns": nil, "table": "customers", "server_id": int64(1), "gtid": nil, "file": "mysql-bin.000001",
			"pos": int64(100 + id), "row": 0, "thread": nil, "query": nil}}
	rec["after"] = map[string]any{customers + ".Value": row}
	b, err := avro.Config{}.Freeze().Marshal(s, rec)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Append(nil, 1, b)
}

func newService(t testing.TB, reg SchemaSource) (*Service, *fakeTables, avro.Schema) {
	return newServiceWith(t, reg, Options{})
}

// newServiceWith is newService with options (Writer, Registry, Log and Now
// are set here).
func newServiceWith(t testing.TB, reg SchemaSource, o Options) (*Service, *fakeTables, avro.Schema) {
	t.Helper()
	s, err := registry.Parse(string(customersAvsc(t)))
	if err != nil {
		t.Fatal(err)
	}
	if reg == nil {
		reg = &fakeRegistry{schemas: map[int]avro.Schema{1: s}}
	}
	tables := newFakeTables(t)
	o.Registry, o.Writer, o.Log = reg, tables, slog.New(slog.NewTextHandler(io.Discard, nil))
	o.Now = func() time.Time { return time.Unix(1_800_000_000, 0) }
	return New(o), tables, s
}

func TestHandleOutcomes(t *testing.T) {
	svc, tables, s := newService(t, nil)
	ctx := context.Background()
	msg := func(data []byte) Message {
		return Message{Topic: customers, MessageID: "m", PublishTime: time.Unix(1_799_999_999, 0), Data: data}
	}
	tests := []struct {
		name  string
		data  []byte
		want  Outcome
		stage failure.Stage
	}{
		{"insert", customerMessage(t, s, "c", 1), Appended, ""},
		{"tombstone", nil, Tombstone, ""},
		{"not framed", []byte("\x01abcdef"), DeadLettered, failure.StageWire},
		{"schemaless JSON without a reader schema", []byte(`{"id": 1}`), DeadLettered, failure.StageRegistry},
		{"unknown schema", wire.Append(nil, 9, []byte{2}), DeadLettered, failure.StageRegistry},
		{"truncated", customerMessage(t, s, "c", 2)[:20], DeadLettered, failure.StageDecode},
		{"unknown op", customerMessage(t, s, "x", 3), DeadLettered, failure.StageEnvelope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(tables.rows[catalog.DeadLetterTable])
			got, err := svc.Handle(ctx, msg(tt.data))
			if got != tt.want || err != nil {
				t.Fatalf("Handle = %v, %v; want %v", got, err, tt.want)
			}
			if tt.want == DeadLettered {
				dl := tables.rows[catalog.DeadLetterTable]
				if len(dl) != before+1 || dl[len(dl)-1]["stage"] != string(tt.stage) {
					t.Errorf("dead letter = %v, want stage %s", dl[len(dl)-1], tt.stage)
				}
			}
		})
	}
	if st := svc.Stats(); st.Appended != 1 || st.Tombstones != 1 || st.DeadLetters != 5 {
		t.Errorf("stats = %+v", st)
	}
	row := tables.rows[catalog.TableName(customers)][0]
	if row[catalog.ColOp] != "c" || row[catalog.ColSchemaID] != int64(1) || row["id"] != int64(1) {
		t.Errorf("changelog row = %v", row)
	}
}

func TestHandleRetriesTransientRegistryFailures(t *testing.T) {
	reg := &fakeRegistry{err: registry.ErrUnavailable}
	svc, tables, s := newService(t, reg)
	got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "m", Data: customerMessage(t, s, "c", 1)})
	if got != Failed || !errors.Is(err, registry.ErrUnavailable) || failure.IsPermanent(err) {
		t.Fatalf("Handle = %v, %v; want a retryable failure", got, err)
	}
	if len(tables.rows[catalog.DeadLetterTable]) != 0 {
		t.Error("a transient failure was dead-lettered")
	}
}

func TestHandleUnknownTopicIsDeadLettered(t *testing.T) {
	svc, tables, s := newService(t, nil)
	got, err := svc.Handle(context.Background(), Message{Topic: "no.such.topic", MessageID: "m", Data: customerMessage(t, s, "c", 1)})
	if got != DeadLettered || err != nil {
		t.Fatalf("Handle = %v, %v", got, err)
	}
	if dl := tables.rows[catalog.DeadLetterTable]; len(dl) != 1 || dl[0]["stage"] != string(failure.StageTable) {
		t.Errorf("dead letters = %v", dl)
	}
}

// BenchmarkHandle measures the CPU work of one message, from bytes to an
// encoded Storage Write row (the append itself is faked).
//
//	go test ./internal/ingest -run '^$' -bench Handle -benchmem
//
// BenchmarkHandle is the ingest CPU per message: bytes -> row bytes ready
// for the Storage Write API; the append itself is dropped. (The reference
// pipeline the compiled plan is checked against, decoding into maps, is
// benchmarked in package transcode.)
func BenchmarkHandle(b *testing.B) {
	mp, err := metrics.Start(context.Background(), metrics.Config{Exporter: metrics.ExportMemory})
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []struct {
		name    string
		metrics *metrics.Recorder
	}{{"compiled", nil}, {"compiled/metrics=memory", mp.Recorder()}} {
		b.Run("path="+path.name, func(b *testing.B) {
			svc, tables, s := newServiceWith(b, nil, Options{Metrics: path.metrics})
			svc.writer = discard{tables}
			data := customerMessage(b, s, "u", 7)
			ctx := context.Background()
			m := Message{Topic: customers, MessageID: "m", PublishTime: time.Unix(1_799_999_999, 0), Data: data}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if out, err := svc.Handle(ctx, m); out != Appended || err != nil {
					b.Fatal(out, err)
				}
			}
		})
	}
}

// discard is fakeTables whose appends encode (as bqwrite.Writer does) and
// keep nothing.
type discard struct{ *fakeTables }

func (d discard) AppendTo(_ context.Context, t *bqwrite.Table, rows []map[string]any) error {
	for _, r := range rows {
		if _, err := t.Encoder.Encode(r); err != nil {
			return failure.Permanent(failure.StageEncode, err)
		}
	}
	return nil
}

func (d discard) AppendEncoded(context.Context, *bqwrite.Table, [][]byte) error { return nil }

func TestPanicIsDeadLettered(t *testing.T) {
	svc, tables, s := newService(t, nil)
	tables.panicOn = catalog.TableName(customers)
	got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "p", Data: customerMessage(t, s, "c", 1)})
	if got != DeadLettered || err != nil {
		t.Fatalf("Handle = %v, %v; want the message dead-lettered", got, err)
	}
	dl := tables.rows[catalog.DeadLetterTable]
	if len(dl) != 1 || dl[0]["stage"] != string(failure.StageInternal) || !strings.Contains(dl[0]["reason"].(string), "nil map") || dl[0]["data"] == nil {
		t.Errorf("dead letters = %v", dl)
	}
	tables.panicOn = ""
	if got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "q", Data: customerMessage(t, s, "c", 2)}); got != Appended || err != nil {
		t.Errorf("next message: %v, %v", got, err)
	}
}

// TestTopicOfAnotherSourceIsRefused: db-inv-t and db.inv.t both map to the
// changelog db_inv_t_changelog; only the source named by the table's label
// is appended, and a table without the label (an older bqcdc) takes any.
func TestTopicOfAnotherSourceIsRefused(t *testing.T) {
	svc, tables, s := newService(t, nil)
	table := tables.tables[catalog.TableName(customers)]
	ctx := context.Background()
	msg := func(topic string) Message {
		return Message{Topic: topic, MessageID: "m", Data: customerMessage(t, s, "c", 1)}
	}
	if got, err := svc.Handle(ctx, msg("dbserver1-inventory-customers")); got != Appended || err != nil {
		t.Fatalf("no label: Handle = %v, %v; want appended", got, err)
	}
	table.Metadata.Labels = map[string]string{catalog.SourceLabel: catalog.LabelValue(customers)}
	if got, err := svc.Handle(ctx, msg(customers)); got != Appended || err != nil {
		t.Fatalf("its own source: Handle = %v, %v; want appended", got, err)
	}
	got, err := svc.Handle(ctx, msg("dbserver1-inventory-customers"))
	if got != DeadLettered || err != nil {
		t.Fatalf("another source: Handle = %v, %v; want dead-lettered", got, err)
	}
	dl := tables.rows[catalog.DeadLetterTable]
	reason, _ := dl[len(dl)-1]["reason"].(string)
	if dl[len(dl)-1]["stage"] != string(failure.StageTable) || !strings.Contains(reason, "topic dbserver1-inventory-customers is not the source") ||
		!strings.Contains(reason, "belongs to source dbserver1_inventory_customers") {
		t.Errorf("dead letter = %v", dl[len(dl)-1])
	}
	if n := len(tables.rows[catalog.TableName(customers)]); n != 2 {
		t.Errorf("%d changelog rows, want 2", n)
	}
}

// Look-alike topics (a.b, a_b, a+b, a~b, a%b, A.b: one changelog name, one
// readable label) are told apart by the exact topic's hash, which bqcdc
// apply labels every changelog with: only the source itself is appended.
func TestLookAlikeTopicsRefused(t *testing.T) {
	svc, tables, s := newService(t, nil)
	const source = "dbserver1.inventory.customers"
	table := tables.tables[catalog.TableName(source)]
	table.Metadata.Labels = map[string]string{catalog.SourceLabel: catalog.LabelValue(source), catalog.SourceHashLabel: catalog.SourceHash(source)}
	ctx := context.Background()
	for _, tc := range []struct {
		topic string
		want  Outcome
	}{
		{source, Appended},
		{"dbserver1_inventory_customers", DeadLettered},
		{"dbserver1+inventory+customers", DeadLettered},
		{"dbserver1~inventory.customers", DeadLettered},
		{"dbserver1%inventory.customers", DeadLettered},
		{"dbserver1-inventory-customers", DeadLettered},
	} {
		got, err := svc.Handle(ctx, Message{Topic: tc.topic, MessageID: "m-" + tc.topic, Data: customerMessage(t, s, "c", 1)})
		if got != tc.want || err != nil {
			t.Errorf("topic %s: Handle = %v, %v; want %v", tc.topic, got, err, tc.want)
			continue
		}
		if tc.want == DeadLettered {
			dl := tables.rows[catalog.DeadLetterTable]
			if reason, _ := dl[len(dl)-1]["reason"].(string); dl[len(dl)-1]["stage"] != string(failure.StageTable) || !strings.Contains(reason, "is not the hash of topic "+tc.topic) {
				t.Errorf("topic %s: dead letter %v", tc.topic, dl[len(dl)-1])
			}
		}
	}
	if n := len(tables.rows[catalog.TableName(source)]); n != 1 {
		t.Errorf("%d changelog rows, want 1 (the source's own)", n)
	}
}
