// Package viewcheck compares a flow's view in BigQuery with the reference
// model (package model) applied to the same changelog. BigQuery evaluates
// the flow's conditions (they are SQL); the model does the folding. The demo
// and the integration tests use it.
package viewcheck

import (
	"context"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/civil"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/loadgen"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Canon renders a BigQuery value as a canonical string, so values of any
// type compare by content (NUMERIC by value, arrays and structs
// element-wise, NULL as NULL).
func Canon(v bigquery.Value) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case *big.Rat:
		return "N" + x.RatString()
	case string:
		return fmt.Sprintf("%q", x)
	case []byte:
		return fmt.Sprintf("b%x", x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case civil.Date, civil.DateTime, civil.Time:
		return fmt.Sprint(x)
	case []bigquery.Value:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Canon(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]bigquery.Value:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + Canon(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprintf("%T:%v", v, v)
}

func query(ctx context.Context, bq *bigquery.Client, sql string) ([]map[string]bigquery.Value, error) {
	it, err := bq.Query(sql).Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("querying %q: %w", sql, err)
	}
	return clients.Collect(it)
}

// seqValue keeps a sequence value orderable by the model.
func seqValue(v bigquery.Value) any {
	switch x := v.(type) {
	case int64, string, time.Time:
		return x
	case nil:
		return nil
	}
	return Canon(v) // DATE, NUMERIC...: fine for the small test domains
}

// Events reads a flow's classified changelog events as model events.
func Events(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location) ([]model.Event, error) {
	rows, err := query(ctx, bq, render.EventsQuery(b, loc))
	if err != nil {
		return nil, err
	}
	var out []model.Event
	for _, r := range rows {
		e := model.Event{Op: model.Op(r["__op"].(string)[0]), Values: map[string]any{}}
		for _, k := range b.Keys {
			e.Key = append(e.Key, keyValue(r[k.Name]))
		}
		for _, s := range b.Sequence {
			e.Seq = append(e.Seq, seqValue(r[s.Name]))
		}
		if id, ok := r[catalog.ColMessageID].(string); ok {
			e.MsgID = id
		}
		e.Ingested, _ = r[catalog.ColIngestedAt].(time.Time)
		if b.SystemSequence != nil {
			e.Sys = seqValue(r[b.SystemSequence.Name])
		}
		for _, c := range values(b) {
			if r[c] != nil {
				e.Values[c] = Canon(r[c])
			} else {
				e.Values[c] = nil
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func keyValue(v bigquery.Value) any {
	if v == nil {
		return nil
	}
	return Canon(v)
}

func values(b *flow.Bound) []string {
	var out []string
	for _, c := range b.Output {
		if _, isKey := b.Keys.Lookup(c.Name); !isKey {
			out = append(out, c.Name)
		}
	}
	return out
}

// Config is the model configuration of a bound flow.
func Config(b *flow.Bound) model.Config {
	cfg := model.Config{Values: values(b), IgnoreNull: map[string]bool{}, Tracked: map[string]bool{}}
	for _, c := range b.IgnoreNull {
		cfg.IgnoreNull[c] = true
	}
	for _, c := range b.Tracked {
		cfg.Tracked[c] = true
	}
	return cfg
}

// Expected computes what the flow's view must return for events, one
// canonical line per row, sorted.
func Expected(b *flow.Bound, events []model.Event) []string {
	var lines []string
	for _, l := range Target(b, events) {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return lines
}

// Target folds events with the model into the flow's target: one canonical
// line per row (as Actual reads it), by row identity (the key, and for SCD 2
// __START_AT).
func Target(b *flow.Bound, events []model.Event) model.Snapshot {
	cfg := Config(b)
	out := model.Snapshot{}
	line := lineOf(b)
	switch {
	case b.Bitemporal:
		version := func(v model.Version) string {
			return line(v.Key, v.Values, catalog.StartAt+"="+seqText(b, v.Start), catalog.EndAt+"="+seqText(b, v.End))
		}
		for _, bl := range model.Bitemporal(events, cfg, version) {
			l := version(bl.Version) + " " + catalog.SystemStartAt + "=" + sysText(bl.SysStart) + " " + catalog.SystemEndAt + "=" + sysText(bl.SysEnd)
			out[l] = l
		}
	case b.SCDType == 1:
		for _, r := range model.SCD1(events, cfg) {
			out[model.KeyString(r.Key)] = line(r.Key, r.Values)
		}
	default:
		for _, v := range model.SCD2(events, cfg) {
			start := seqText(b, v.Start)
			out[model.KeyString(v.Key)+" "+start] = line(v.Key, v.Values, catalog.StartAt+"="+start, catalog.EndAt+"="+seqText(b, v.End))
		}
	}
	return out
}

func sysText(v any) string {
	if v == nil {
		return "NULL"
	}
	return Canon(v)
}

func seqText(b *flow.Bound, seq []any) string {
	if seq == nil {
		return "NULL"
	}
	if !b.SequenceStruct {
		return Canon(seq[0])
	}
	m := map[string]bigquery.Value{}
	for i, s := range b.Sequence {
		m[s.Name] = seq[i]
	}
	return Canon(m)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// Actual reads the flow's view, one canonical line per row, sorted.
func Actual(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location) ([]string, error) {
	return actual(ctx, bq, b, fmt.Sprintf("SELECT * FROM %s.%s.%s", catalog.QuoteIdent(loc.Project), catalog.QuoteIdent(loc.Dataset(b.Flow)), catalog.QuoteIdent(catalog.ViewName(b.Flow))))
}

// actual runs a query returning target rows (with extra columns after
// them), one canonical line per row, sorted.
func actual(ctx context.Context, bq *bigquery.Client, b *flow.Bound, sql string, extra ...string) ([]string, error) {
	rows, err := query(ctx, bq, sql)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, r := range rows {
		parts := []string{}
		for _, c := range b.Output {
			parts = append(parts, c.Name+"="+Canon(r[c.Name]))
		}
		if b.SCDType == 2 {
			parts = append(parts, catalog.StartAt+"="+Canon(r[catalog.StartAt]), catalog.EndAt+"="+Canon(r[catalog.EndAt]))
		}
		if b.Bitemporal {
			parts = append(parts, catalog.SystemStartAt+"="+Canon(r[catalog.SystemStartAt]), catalog.SystemEndAt+"="+Canon(r[catalog.SystemEndAt]))
		}
		for _, x := range extra {
			parts = append(parts, x+"="+Canon(r[x]))
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	sort.Strings(lines)
	return lines, nil
}

// Check compares the view with the model over the current changelog and
// returns a readable difference ("" when equal).
func Check(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location) (string, error) {
	events, err := Events(ctx, bq, b, loc)
	if err != nil {
		return "", err
	}
	got, err := Actual(ctx, bq, b, loc)
	if err != nil {
		return "", err
	}
	return Diff(Expected(b, events), got), nil
}

// Bind binds flows to what they read as it is in BigQuery now (their
// changelogs' and snapshot tables' columns), as compaction does, and
// returns the tables' metadata by source key.
func Bind(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow) ([]*flow.Bound, map[string]*bigquery.TableMetadata, error) {
	cols, mds, err := apply.ReadSources(ctx, apply.ClientReader(bq), loc, flows, 0)
	if err != nil {
		return nil, nil, err
	}
	bound, err := flow.BindAll(flows, cols)
	return bound, mds, err
}

// Flows binds flows to their changelogs and compares every view with the
// model (Check); it returns the differences, one paragraph per view that
// differs ("" when every view equals the model).
func Flows(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow) (string, error) {
	bound, _, err := Bind(ctx, bq, loc, flows)
	if err != nil {
		return "", err
	}
	var problems []string
	for _, b := range bound {
		diff, err := Check(ctx, bq, b, loc)
		if err != nil {
			return "", fmt.Errorf("checking view %s: %w", b.Target, err)
		}
		if diff != "" {
			problems = append(problems, fmt.Sprintf("view %s:\n%s", b.Target, diff))
		}
	}
	return strings.Join(problems, "\n"), nil
}

// Load is Flows for the flows of a synthetic load (loadgen.Spec.Flows, as
// `bqcdc loadgen --write` writes them for `bqcdc apply`), wherever they were
// applied: the local stack or a project.
func Load(ctx context.Context, bq *bigquery.Client, loc catalog.Location, s loadgen.Spec) (string, error) {
	flows, err := flow.Parse("loadgen.sql", s.Flows())
	if err != nil {
		return "", fmt.Errorf("parsing the load's flows: %w", err)
	}
	return Flows(ctx, bq, loc, flows)
}

// Diff lists the lines only one side has.
func Diff(want, got []string) string {
	count := map[string]int{}
	for _, w := range want {
		count[w]++
	}
	for _, g := range got {
		count[g]--
	}
	var b strings.Builder
	for _, w := range want {
		if count[w] > 0 {
			fmt.Fprintf(&b, "- missing: %s\n", w)
			count[w]--
		}
	}
	for _, g := range got {
		if count[g] < 0 {
			fmt.Fprintf(&b, "+ extra:   %s\n", g)
			count[g]++
		}
	}
	return b.String()
}

// SnapshotExpected is what a snapshot flow's view must return for the
// snapshots applied (model rows whose keys and values are canonical
// strings, as Canon renders them), one canonical line per row, sorted.
func SnapshotExpected(b *flow.Bound, rows []model.SnapshotRow) []string {
	cfg := Config(b)
	line := lineOf(b)
	var lines []string
	if b.SCDType == 1 {
		for _, r := range model.SnapshotSCD1(rows, cfg) {
			lines = append(lines, line(r.Key, r.Values))
		}
	} else {
		for _, v := range model.SnapshotSCD2(rows, cfg) {
			lines = append(lines, line(v.Key, v.Values, catalog.StartAt+"="+seqText(b, v.Start), catalog.EndAt+"="+seqText(b, v.End)))
		}
	}
	sort.Strings(lines)
	return lines
}

// lineOf returns how a row of b's view is written as a canonical line: each
// output column as name=value (canonical text, NULL for none), keys taken
// from key and the others from vals, then extra.
func lineOf(b *flow.Bound) func(key []any, vals map[string]any, extra ...string) string {
	keyNames := b.Keys.Names()
	return func(key []any, vals map[string]any, extra ...string) string {
		parts := []string{}
		for _, c := range b.Output {
			var v any
			if i := indexOf(keyNames, c.Name); i >= 0 {
				v = key[i]
			} else {
				v = vals[c.Name]
			}
			if v == nil {
				v = "NULL"
			}
			parts = append(parts, c.Name+"="+v.(string))
		}
		return strings.Join(append(parts, extra...), " ")
	}
}

// CanonJSON is Canon of a value read from acceptance data (JSON): a number
// is an INT64, a string a STRING, null NULL.
func CanonJSON(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return Canon(int64(x))
	case string:
		return Canon(x)
	}
	return fmt.Sprint(v)
}
