package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

// Published is what the producer sent.
type Published struct {
	Event
	MessageID string
}

// Produce registers the demo schemas under their subjects (as Debezium's
// AvroConverter does: version 1 of each, and version 2 of customers, which
// adds LoyaltyField) and publishes the events, in order, to Pub/Sub.
func Produce(ctx context.Context, st *localstack.Stack, events []Event) ([]Published, error) {
	msgs, err := Encode(ctx, registry.New(st.RegistryURL, registry.Options{}), st.SchemasDir, events)
	if err != nil {
		return nil, err
	}
	var out []Published
	for _, m := range msgs {
		res := st.PubSub.Publisher(m.Topic).Publish(ctx, &pubsub.Message{Data: m.Data, Attributes: map[string]string{"key": fmt.Sprint(m.Key)}})
		id, err := res.Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("publishing to %s: %w", m.Topic, err)
		}
		out = append(out, Published{Event: m.Event, MessageID: id})
	}
	return out, nil
}

// Message is a demo event as the producer sends it: Confluent-framed Avro
// (empty for a tombstone, the raw bytes of a bad message).
type Message struct {
	Event
	Data []byte
}

// Encode registers the demo schemas of schemasDir with reg under their
// subjects (version 1 of each, and version 2 of customers, which adds
// LoyaltyField) and encodes the events, in order, as Debezium's
// AvroConverter does.
func Encode(ctx context.Context, reg *registry.Client, schemasDir string, events []Event) ([]Message, error) {
	type topicSchema struct {
		id     int
		schema avro.Schema
		api    avro.API // per schema: hamba's shared codec cache confuses record versions
	}
	register := func(subject, text string) (topicSchema, error) {
		id, err := reg.Register(ctx, subject, text)
		if err != nil {
			return topicSchema{}, err
		}
		s, err := registry.Parse(text)
		if err != nil {
			return topicSchema{}, err
		}
		return topicSchema{id, s, avro.Config{}.Freeze()}, nil
	}
	schemas := map[string]topicSchema{}
	var v2 topicSchema
	for _, topic := range []string{Customers, Orders} {
		subject := catalog.Subject(topic)
		b, err := os.ReadFile(filepath.Join(schemasDir, subject+".avsc"))
		if err != nil {
			return nil, fmt.Errorf("reading demo schema: %w", err)
		}
		if schemas[topic], err = register(subject, string(b)); err != nil {
			return nil, err
		}
		if topic == Customers {
			text, err := cdc.EditImage(b, func(f []any) []any { return append(f, LoyaltyField) })
			if err != nil {
				return nil, err
			}
			if v2, err = register(subject, text); err != nil {
				return nil, err
			}
		}
	}
	out := make([]Message, 0, len(events))
	for _, e := range events {
		data := e.Raw
		if !e.Tombstone() && e.Raw == nil {
			ts := schemas[e.Topic]
			if e.V2 {
				ts = v2
			}
			payload, err := ts.api.Marshal(ts.schema, envelope(e))
			if err != nil {
				return nil, fmt.Errorf("encoding demo event %+v: %w", e, err)
			}
			data = wire.Append(nil, int32(ts.id), payload)
		}
		out = append(out, Message{Event: e, Data: data})
	}
	return out, nil
}

// envelope builds the Debezium MySQL envelope of an event.
func envelope(e Event) map[string]any {
	table := e.Topic[strings.LastIndexByte(e.Topic, '.')+1:]
	ts := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC).Add(time.Duration(e.Pos) * time.Millisecond)
	snapshot := "false"
	if e.Op == "r" {
		snapshot = "true"
	}
	rec := map[string]any{
		"op": e.Op, "ts_ms": ts.UnixMilli() + 40, "ts_us": nil, "ts_ns": nil, "transaction": nil, "before": nil, "after": nil,
		"source": map[string]any{
			"version": "2.7.3.Final", "connector": "mysql", "name": "dbserver1", "ts_ms": ts.UnixMilli(),
			"snapshot": snapshot, "db": "inventory", "sequence": nil, "ts_us": ts.UnixMicro(), "ts_ns": nil,
			"table": table, "server_id": int64(223344), "gtid": nil, "file": "mysql-bin.000003",
			"pos": e.Pos, "row": 0, "thread": nil, "query": nil,
		},
	}
	image := map[string]any{e.Topic + ".Value": e.Row}
	if e.Op == "d" {
		rec["before"] = image
	} else {
		rec["after"] = image
	}
	return rec
}

// Result summarises where the published messages ended.
type Result struct {
	Published, Rows, Tombstones, DeadLetters, Views int
	Golds                                           int // materialized views checked
	Problems                                        []string
}

// OK reports whether everything landed as sent.
func (r Result) OK() bool { return len(r.Problems) == 0 }

// WaitDelivered waits until the relays have acknowledged n messages.
func WaitDelivered(ctx context.Context, st *localstack.Stack, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var acked int64
		for _, r := range st.Relays {
			acked += r.Stats().Delivered
		}
		if acked >= int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d messages acknowledged after %s", acked, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Check compares what landed with what was published: every Avro message
// exactly once in its changelog with its op and sequence, every tombstone
// counted, every bad message in the dead-letter table.
func Check(ctx context.Context, st *localstack.Stack, sent []Published) (Result, error) {
	res, err := CheckLanded(ctx, st.BigQuery, st.Location(), st.Flows, sent, int(st.Ingest.Stats().Tombstones))
	if err != nil {
		return res, err
	}
	// Every materialized view equals its SELECT over the target's rows now.
	for _, g := range st.BoundGolds {
		diff, err := viewcheck.CheckGold(ctx, st.BigQuery, g, st.Location())
		if err != nil {
			return res, err
		}
		if diff != "" {
			res.Problems = append(res.Problems, fmt.Sprintf("materialized view %s differs from its SELECT over %s:\n%s", g.Name, g.From, diff))
		}
		res.Golds++
	}
	return res, nil
}

// CheckLanded is Check for any deployment of the demo flows: the
// changelogs, dead letters and views in loc, and the tombstones the ingest
// function counted.
func CheckLanded(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, sent []Published, tombstones int) (Result, error) {
	res := Result{Published: len(sent)}
	landed := map[string][]map[string]bigquery.Value{}
	for _, topic := range []string{Customers, Orders} {
		rows, err := Query(ctx, bq, fmt.Sprintf("SELECT _cdc_message_id, _cdc_op, _cdc_sequence FROM `%s.%s`", loc.DefaultDataset, catalog.TableName(topic)))
		if err != nil {
			return res, err
		}
		for _, r := range rows {
			landed[r["_cdc_message_id"].(string)] = append(landed[r["_cdc_message_id"].(string)], r)
		}
		res.Rows += len(rows)
	}
	dead, err := Query(ctx, bq, fmt.Sprintf("SELECT message_id, stage, reason FROM `%s.%s`", loc.DefaultDataset, catalog.DeadLetterTable))
	if err != nil {
		return res, err
	}
	deadByID := map[string]map[string]bigquery.Value{}
	for _, d := range dead {
		deadByID[d["message_id"].(string)] = d
	}
	res.DeadLetters = len(dead)
	res.Tombstones = tombstones
	wantTombstones := 0
	for _, p := range sent {
		switch {
		case p.Tombstone():
			wantTombstones++
		case p.Raw != nil:
			if _, ok := deadByID[p.MessageID]; !ok {
				res.Problems = append(res.Problems, fmt.Sprintf("bad message %s (%s) is not in the dead-letter table", p.MessageID, p.Note))
			}
		default:
			rows := landed[p.MessageID]
			if len(rows) != 1 {
				res.Problems = append(res.Problems, fmt.Sprintf("message %s (%s %d %s) landed %d times, want once", p.MessageID, p.Op, p.Key, p.Note, len(rows)))
				continue
			}
			if rows[0]["_cdc_op"] != p.Op || rows[0]["_cdc_sequence"] != p.Sequence() {
				res.Problems = append(res.Problems, fmt.Sprintf("message %s landed as op %v sequence %v, want %s %s", p.MessageID, rows[0]["_cdc_op"], rows[0]["_cdc_sequence"], p.Op, p.Sequence()))
			}
		}
	}
	// Bind the flows to the changelogs as they are now: schema evolution may
	// have added columns since the stack applied them.
	bound, _, err := viewcheck.Bind(ctx, bq, loc, flows)
	if err != nil {
		return res, err
	}
	for _, b := range bound {
		diff, err := viewcheck.Check(ctx, bq, b, loc)
		if err != nil {
			return res, err
		}
		if diff != "" {
			res.Problems = append(res.Problems, fmt.Sprintf("view %s differs from the reference model:\n%s", b.Target, diff))
		}
		res.Views++
	}
	if res.Tombstones != wantTombstones {
		res.Problems = append(res.Problems, fmt.Sprintf("%d tombstones counted, want %d", res.Tombstones, wantTombstones))
	}
	return res, nil
}

// Query runs a query and returns its rows by column name.
func Query(ctx context.Context, bq *bigquery.Client, sql string) ([]map[string]bigquery.Value, error) {
	it, err := bq.Query(sql).Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("querying %q: %w", sql, err)
	}
	return clients.Collect(it)
}

// PrintTable writes rows as an aligned text table.
func PrintTable(w io.Writer, title string, cols []string, rows []map[string]bigquery.Value) {
	fmt.Fprintf(w, "\n%s (%d rows)\n", title, len(rows))
	cells := make([][]string, len(rows)+1)
	cells[0] = cols
	for i, r := range rows {
		for _, c := range cols {
			cells[i+1] = append(cells[i+1], format(r[c]))
		}
	}
	width := make([]int, len(cols))
	for _, row := range cells {
		for j, c := range row {
			width[j] = max(width[j], len(c))
		}
	}
	for i, row := range cells {
		var b strings.Builder
		for j, c := range row {
			fmt.Fprintf(&b, "  %-*s", width[j], c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if i == 0 {
			var sep strings.Builder
			for _, wd := range width {
				sep.WriteString("  " + strings.Repeat("-", wd))
			}
			fmt.Fprintln(w, sep.String())
		}
	}
}

func format(v bigquery.Value) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.000000")
	case interface{ FloatString(int) string }:
		return x.FloatString(2)
	case map[string]bigquery.Value:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + format(x[k])
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprint(v)
}
