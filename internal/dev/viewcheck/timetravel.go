package viewcheck

import (
	"context"
	"fmt"
	"github.com/bqcdc/bqcdc/internal/apply"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/model"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/sql/render"
)

// CheckAt compares <target>_at(t) with the model over the changelog events
// ingested by t; it returns a readable difference ("" when equal). The
// body is rendered with the flow's newest committed watermark as its
// pruning bound, the tightest a deployment's can be (compaction renders
// the function with an older one).
func CheckAt(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location, t time.Time) (string, error) {
	events, err := Events(ctx, bq, b, loc)
	if err != nil {
		return "", err
	}
	hint, err := apply.Watermark(ctx, bq, loc, b.Flow)
	if err != nil {
		return "", err
	}
	sql, err := plan.For(b, loc).AtQuery(t, hint)
	if err != nil {
		return "", err
	}
	got, err := actual(ctx, bq, b, sql)
	if err != nil {
		return "", err
	}
	return Diff(Expected(b, model.AsOf(events, t)), got), nil
}

// Watermark reads the flow's compaction watermark: the change feed's
// positions are final up to it (render.Epoch before the first compaction).
func Watermark(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location) (time.Time, error) {
	rows, err := query(ctx, bq, fmt.Sprintf("SELECT MAX(%s) AS w FROM %s WHERE %s = 'W'", catalog.ColStateWatermark, loc.StateTable(b.Flow), catalog.ColStateOp))
	if err != nil {
		return time.Time{}, err
	}
	if w, ok := rows[0]["w"].(time.Time); ok {
		return w.UTC(), nil
	}
	return render.Epoch, nil
}

// ExpectedChanges is the model's change feed of (from, to], clamped to the
// watermark w, one canonical line per change, sorted.
func ExpectedChanges(b *flow.Bound, events []model.Event, from, to, w time.Time) []string {
	if w.Before(to) {
		to = w
	}
	var lines []string
	for _, c := range model.Changes(events, from, to, func(es []model.Event) model.Snapshot { return Target(b, es) }) {
		lines = append(lines, changeLine(c.Row, c.Type, c.Position))
	}
	sort.Strings(lines)
	return lines
}

func changeLine(row, typ string, pos time.Time) string {
	return strings.Join([]string{row, catalog.ColChangeType + "=" + Canon(typ), catalog.ColCommitPosition + "=" + Canon(pos)}, " ")
}

// ActualChanges reads <target>_changes(from, to), one canonical line per
// change, sorted; a zero from or to is passed as NULL. It runs the
// function's body as a query (render.ChangesQuery): the emulator's analyzer
// crashes on calls of table functions this size.
func ActualChanges(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location, from, to time.Time) ([]string, error) {
	sql, err := plan.For(b, loc).ChangesQuery(from, to)
	if err != nil {
		return nil, err
	}
	return actual(ctx, bq, b, sql, catalog.ColChangeType, catalog.ColCommitPosition)
}

// CheckChanges compares <target>_changes(from, to) with the model's feed;
// a zero from reads from the start, a zero to up to the watermark.
func CheckChanges(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location, from, to time.Time) (string, error) {
	events, err := Events(ctx, bq, b, loc)
	if err != nil {
		return "", err
	}
	w, err := Watermark(ctx, bq, b, loc)
	if err != nil {
		return "", err
	}
	got, err := ActualChanges(ctx, bq, b, loc, from, to)
	if err != nil {
		return "", err
	}
	upTo := to
	if upTo.IsZero() {
		upTo = w
	}
	return Diff(ExpectedChanges(b, events, from, upTo, w), got), nil
}

// ReplayChanges applies the change lines of ActualChanges (all of them, from
// the start) to an empty table and returns the rows left, sorted: they must
// be the target's.
func ReplayChanges(b *flow.Bound, lines []string) []string {
	names := b.Output.Names()
	if b.SCDType == 2 {
		names = append(names, catalog.StartAt, catalog.EndAt)
	}
	idNames := append(b.Keys.Names(), catalog.StartAt)
	var changes []model.Change
	for _, l := range lines {
		f := fields(l, append(names, catalog.ColChangeType, catalog.ColCommitPosition))
		at, err := time.Parse(time.RFC3339Nano, f[catalog.ColCommitPosition])
		if err != nil {
			panic(fmt.Sprintf("viewcheck: change line %q: %v", l, err))
		}
		var id []string
		for _, n := range idNames {
			id = append(id, n+"="+f[n])
		}
		row := l[:strings.Index(l, " "+catalog.ColChangeType+"=")]
		changes = append(changes, model.Change{Type: strings.Trim(f[catalog.ColChangeType], `"`), Position: at, ID: strings.Join(id, " "), Row: row})
	}
	var out []string
	for _, row := range model.Replay(nil, changes) {
		out = append(out, row)
	}
	sort.Strings(out)
	return out
}

// fields splits a canonical line "a=1 b=\"x y\" ..." whose fields are names,
// in that order (values may hold spaces).
func fields(line string, names []string) map[string]string {
	out := map[string]string{}
	for i, n := range names {
		start := len(n) + 1
		if i > 0 {
			start = strings.Index(line, " "+n+"=") + len(n) + 2
		}
		rest := line[start:]
		if i+1 < len(names) {
			rest = rest[:strings.Index(rest, " "+names[i+1]+"=")]
		}
		out[n] = rest
	}
	return out
}

// AsOf reads <target>_as_of(business, system) of a bitemporal flow (the
// arguments as SQL literals), one canonical line per row, sorted; it runs
// the function's body as a query (see ActualChanges).
func AsOf(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location, business, system string) ([]string, error) {
	sql, err := render.AsOfQuery(b, loc, business, system)
	if err != nil {
		return nil, err
	}
	return actual(ctx, bq, b, sql)
}

// The Call functions read the table functions by calling them, as a user
// does, where ActualChanges, AsOf and CheckAt run their bodies as queries:
// only real BigQuery can call them (the emulator's analyzer crashes on calls
// of bodies this size; internal/emulator, concession 11).

// CallAt reads <target>_at(t), one canonical line per row, sorted.
func CallAt(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location, t time.Time) ([]string, error) {
	return actual(ctx, bq, b, fmt.Sprintf("SELECT * FROM %s(%s)", loc.Routine(b.Flow, catalog.AtFunctionName(b.Flow)), render.Literal(t)))
}

// CallChanges reads <target>_changes(from, to) as ActualChanges does; a
// zero from or to is passed as NULL.
func CallChanges(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location, from, to time.Time) ([]string, error) {
	lit := func(t time.Time) string {
		if t.IsZero() {
			return "CAST(NULL AS TIMESTAMP)"
		}
		return render.Literal(t)
	}
	sql := fmt.Sprintf("SELECT * FROM %s(%s, %s)", loc.Routine(b.Flow, catalog.ChangesFunctionName(b.Flow)), lit(from), lit(to))
	return actual(ctx, bq, b, sql, catalog.ColChangeType, catalog.ColCommitPosition)
}

// CallAsOf reads <target>_as_of(business, system) of a bitemporal flow (the
// arguments as SQL expressions), as AsOf does.
func CallAsOf(ctx context.Context, bq *bigquery.Client, b *flow.Bound, loc catalog.Location, business, system string) ([]string, error) {
	return actual(ctx, bq, b, fmt.Sprintf("SELECT * FROM %s(%s, %s)", loc.Routine(b.Flow, catalog.AsOfFunctionName(b.Flow)), business, system))
}
