package folds

import (
	"context"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
)

const laggingFeedFlows = `
CREATE FLOW lf_current AS AUTO CDC INTO lf_current FROM STREAM(` + "`lf.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city);

CREATE FLOW lf_history AS AUTO CDC INTO lf_history FROM STREAM(` + "`lf.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city) STORED AS SCD TYPE 2;
`

// TestLaggingFeedSurvivesMaintenance: a change feed behind the watermark
// (ChangeFeedEvery) when the daily maintenance folds the levels still gets
// its baselines: an update made while the feed lagged is an update (pre-
// and post-image) once the feed catches up, not an insert. Maintenance
// reduces events only as of the feed's position; before, it reduced them
// as of the watermark and dropped the update's predecessor.
func TestLaggingFeedSurvivesMaintenance(t *testing.T) {
	e := testenv.New(t, stack, "laggingfeed")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "lf.sql", laggingFeedFlows, "lf.users", testenv.UsersImage)
	at, row := ttClock()
	compactAt := func(now time.Time, opts compact.Options) { t.Helper(); e.CompactAt(t, bound, now, opts) }
	noMaintenance := compact.Options{MaintainEvery: -1}
	e.AppendRows(t, "lf.users", []map[string]any{row(1, "a", "x", "INSERT", 1, "m1", 1), row(2, "b", "y", "INSERT", 1, "m2", 1)})
	compactAt(at(2), noMaintenance) // the feed materialized to minute 2
	e.AppendRows(t, "lf.users", []map[string]any{row(1, "c", "x", "UPDATE", 2, "m3", 3), row(2, nil, nil, "DELETE", 2, "m4", 3)})
	lagging := compact.Options{MaintainEvery: -1, ChangeFeedEvery: 24 * time.Hour}
	compactAt(at(4), lagging) // folded; the feed stays at minute 2
	lagging.MaintainEvery, lagging.MaintainMargin, lagging.MaintainGranularity = time.Minute, time.Second, time.Second
	compactAt(at(6), lagging)       // nothing new: the levels are folded
	compactAt(at(8), noMaintenance) // the feed catches up
	for _, b := range bound {
		diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if diff != "" {
			t.Errorf("%s_changes differs from the model after maintenance with the feed behind:\n%s", b.Target, diff)
		}
		if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff != "" {
			t.Errorf("%s: view differs from the model (%v):\n%s", b.Target, err, diff)
		}
	}
}
