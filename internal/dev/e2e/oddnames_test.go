package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/testenv"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Reserved words as column names (and as key, sequence, tracked and
// condition columns) must survive rendering: the generated SQL quotes every
// identifier, in the views and in compaction. (The TIMESTAMP sequence is a
// scalar here: the emulator returns a TIMESTAMP inside a STRUCT in a form
// the Go client cannot parse.)
func TestReservedWordColumns(t *testing.T) {
	e := testenv.New(t, stack, "odd-names")
	image := schema.Columns{
		{Name: "order", Type: schema.Int64}, {Name: "group", Type: schema.String}, {Name: "select", Type: schema.String},
		{Name: "from", Type: schema.Date}, {Name: "where", Type: schema.String}, {Name: "by", Type: schema.Timestamp},
		{Name: "Window", Type: schema.Int64},
	}
	bound := e.ApplySourceFlows(t, "odd.sql", `
CREATE FLOW odd_current AS AUTO CDC INTO `+"`odd_current`"+` FROM STREAM(`+"`odd.names`"+`)
KEYS (`+"`order`, `group`"+`) APPLY AS DELETE WHEN `+"`select`"+` = 'x' SEQUENCE BY STRUCT(`+"`Window`, `select`"+`)
WHERE `+"`where`"+` IS NULL OR `+"`where`"+` != 'skip'
IGNORE NULL UPDATES ON (`+"`from`"+`);

CREATE FLOW odd_history AS AUTO CDC INTO odd_history FROM STREAM(`+"`odd.names`"+`)
KEYS (`+"`order`, `group`"+`) APPLY AS DELETE WHEN `+"`select`"+` = 'x' SEQUENCE BY `+"`by`"+`
STORED AS SCD TYPE 2 TRACK HISTORY ON (`+"`from`, `where`"+`);
`, "odd.names", image)
	at := time.Now().Add(-time.Hour)
	row := func(i int, order int64, group, sel string, from any, where any, window int64) map[string]any {
		return map[string]any{"order": order, "group": group, "select": sel, "from": from, "where": where,
			"by": at.Add(time.Duration(i) * time.Second).UnixMicro(), "Window": window,
			catalog.ColMessageID: fmt.Sprintf("o%02d", i), catalog.ColIngestedAt: at.Add(time.Duration(i) * time.Millisecond).UnixMicro()}
	}
	e.AppendRows(t, "odd.names", []map[string]any{
		row(1, 1, "g", "a", int32(19000), nil, 1),
		row(2, 1, "g", "b", nil, "w", 2),
		row(3, 2, "g", "a", int32(19001), "skip", 1),
		row(4, 2, "h", "a", int32(19002), nil, 5),
		row(5, 2, "h", "x", nil, nil, 6),
		row(6, 3, "g", "c", int32(19003), "w", 3),
	})
	check := func(when string) {
		for _, b := range bound {
			diff, err := viewcheck.Check(context.Background(), e.BQ, b, e.Loc)
			if err != nil || diff != "" {
				t.Fatalf("%s: view %s: %v\n%s", when, b.Target, err, diff)
			}
		}
	}
	check("before compaction")
	now := at.Add(time.Minute)
	for _, r := range e.CompactAt(t, bound, now, compact.Options{}) {
		if r.Outcome != compact.Compacted {
			t.Fatalf("compaction of %s: %+v", r.Flow, r)
		}
	}
	check("after compaction")
}
