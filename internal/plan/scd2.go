package plan

import (
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"time"

	"github.com/bqcdc/bqcdc/sql/render"
)

// scd2 is a change stream folded to its history: one row per version
// (render.HistoryView), with <target>_at and <target>_changes.
type scd2 struct{ stream }

func (scd2) shape() render.Shape { return render.History }

func (scd2) describe(p *Plan) string {
	return streamDescription(p, "history (SCD type 2): one row per version; __START_AT inclusive, __END_AT exclusive, NULL for the current version")
}

func (scd2) view(p *Plan, hint time.Time, _ string) (string, error) {
	return render.HistoryView(p.Flow, p.Loc, hint)
}

func (scd2) maintainEvery(every time.Duration) time.Duration { return historyMaintainEvery(every) }

func (scd2) stateColumns(b *flow.Bound) schema.Columns { return historyStateColumns(b) }
