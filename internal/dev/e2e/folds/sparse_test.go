package folds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

const sparseFlows = `
CREATE FLOW sp_history AS AUTO CDC INTO sp_history FROM STREAM(` + "`sp.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city, score, sequenceNum) STORED AS SCD TYPE 2
TRACK HISTORY ON (name);

CREATE FLOW sp_bitemporal AS AUTO CDC INTO sp_bitemporal FROM STREAM(` + "`sp.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (userId, name, city, score, sequenceNum, _cdc_ingested_at) STORED AS BITEMPORAL
TRACK HISTORY ON (name);
`

var sparseImage = schema.Columns{
	{Name: "userId", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "city", Type: schema.String},
	{Name: "score", Type: schema.Float64}, {Name: "operation", Type: schema.String}, {Name: "sequenceNum", Type: schema.Int64},
}

// TestSparseRowsRebuildExactly: maintenance stores the events of a state
// of versions that open no version sparse (only what differs from the
// event that opened their version, and __base), and every read rebuilds
// them: the views, <target>_at and <target>_changes equal the model after
// maintenance, after a late event that re-cuts a version between a base
// and its sparse rows (its tracked column differs, so the sparse rows
// after it open versions of their own, rebuilt from their base, not from
// the late event), after a redelivered copy of a sparse row's message,
// and after a second maintenance over all of it. An event that sets an
// untracked column to NULL is stored whole (a sparse NULL means "as the
// base"), an update that changes nothing is a sparse row of NULLs, and
// an event whose version opened without a message id is stored whole.
func TestSparseRowsRebuildExactly(t *testing.T) {
	e := testenv.New(t, stack, "sparse")
	ctx := context.Background()
	e.Apply.SkipTableFunctions = false
	bound := e.ApplySourceFlows(t, "sp.sql", sparseFlows, "sp.users", sparseImage)
	at, _ := ttClock()
	row := func(id int64, name, city, score any, op string, seq int64, msg any, minute int) map[string]any {
		return map[string]any{"userId": id, "name": name, "city": city, "score": score, "operation": op, "sequenceNum": seq,
			"_cdc_message_id": msg, "_cdc_ingested_at": at(minute).UnixMicro()}
	}
	e.AppendRows(t, "sp.users", []map[string]any{
		row(1, "a", "x", 1.5, "INSERT", 10, "m01", 1),
		row(1, "a", "y", 1.5, "UPDATE", 20, "m02", 1), // opens no version: city only
		row(1, "a", "z", 2.5, "UPDATE", 30, "m03", 2),
		row(1, "a", nil, 2.5, "UPDATE", 40, "m04", 2), // city to NULL: stored whole
		row(1, "a", "w", 2.5, "UPDATE", 50, "m05", 3),
		row(2, "b", "x", nil, "INSERT", 10, "m06", 1),
		row(2, "b", "x", nil, "UPDATE", 20, "m07", 2), // changes nothing: a sparse row of NULLs
		row(2, nil, nil, nil, "DELETE", 30, "m08", 3),
		row(2, "b", "v", 0.5, "INSERT", 40, "m09", 4), // after a delete: opens one
		row(2, "b", "u", 0.5, "UPDATE", 50, "m10", 4),
		row(3, "c", "x", 1.0, "INSERT", 10, "m11", 4),
		row(3, "d", "x", 1.0, "UPDATE", 20, "m12", 5), // tracked: opens one
		row(3, "d", "y", 1.0, "UPDATE", 30, "m13", 5),
		row(4, "e", "x", 1.0, "INSERT", 10, nil, 5),   // no message id: never a base
		row(4, "e", "y", 1.0, "UPDATE", 20, "m16", 5), // so stored whole
	})
	check := func(when string) {
		t.Helper()
		e.CheckViews(t, bound, when)
		for _, b := range bound {
			if b.SystemSequence != nil {
				continue // no _at or _changes: the view is the time travel
			}
			for _, m := range []int{2, 4, 7, 9} {
				if diff, err := viewcheck.CheckAt(ctx, e.BQ, b, e.Loc, at(m)); err != nil || diff != "" {
					t.Errorf("%s: %s_at(minute %d) differs from the model (%v):\n%s", when, b.Target, m, err, diff)
				}
			}
			if diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || diff != "" {
				t.Errorf("%s: %s_changes differs from the model (%v):\n%s", when, b.Target, err, diff)
			}
		}
	}
	maintain := compact.Options{MaintainEvery: time.Minute, MaintainMargin: time.Second, MaintainGranularity: time.Second}
	e.CompactAt(t, bound, at(6), compact.Options{MaintainEvery: -1})
	check("after the first run")
	e.CompactAt(t, bound, at(7), maintain)
	check("after maintenance")
	for _, b := range bound {
		sparseRows(t, e, b, "after maintenance", 6, 1)
	}

	e.AppendRows(t, "sp.users", []map[string]any{
		row(1, "q", "k", 9.5, "UPDATE", 25, "m14", 8), // late, tracked: re-cuts between the base (10) and its sparse rows
		row(1, "a", "y", 1.5, "UPDATE", 20, "m02", 8), // a redelivered copy of a sparse row's message
		row(3, "d", "y", 3.0, "UPDATE", 40, "m15", 8),
	})
	check("late event and a redelivered copy in the tail")
	e.CompactAt(t, bound, at(9), compact.Options{MaintainEvery: -1})
	check("after folding them")
	e.CompactAt(t, bound, at(11), maintain)
	check("after maintenance over the late event")
	for _, b := range bound {
		// Key 1 now opens a version at 25 and again at 30 (name back to a):
		// 30 is a base; 20 stays sparse on 10, 50 on 30; key 3 adds 40.
		sparseRows(t, e, b, "after the second maintenance", 6, 1)
	}
}

// sparseRows checks how many rows of b's state are stored sparse, and that
// at least whole of them store name (a tracked column, always the base's)
// as NULL: maintenance wrote what it should, not only rows that read right.
func sparseRows(t *testing.T, e *testenv.Env, b *flow.Bound, when string, want, nameNull int) {
	t.Helper()
	rows, err := e.Query(fmt.Sprintf("SELECT COUNTIF(%[1]s IS NOT NULL) AS n, COUNTIF(%[1]s IS NOT NULL AND `name` IS NULL) AS name_null FROM %[2]s WHERE __op = 'U'",
		catalog.ColStateBase, e.Loc.StateTable(b.Flow)))
	if err != nil {
		t.Fatal(err)
	}
	n, nn := rows[0]["n"].(int64), rows[0]["name_null"].(int64)
	if int(n) != want || int(nn) < nameNull {
		t.Errorf("%s: %s keeps %d sparse rows (%d with name NULL), want %d (at least %d)", when, b.Target, n, nn, want, nameNull)
	}
}
