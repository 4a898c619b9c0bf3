package plan

import (
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"time"

	"github.com/bqcdc/bqcdc/sql/render"
)

// bitemporal is a change stream folded to its history in business time
// (SEQUENCE BY) and system time (SYSTEM SEQUENCE BY): render.BitemporalView,
// with <target>_as_of. Its state is a history's (render.History): the
// system time is an event column like any other.
type bitemporal struct{ stream }

func (bitemporal) shape() render.Shape { return render.History }

func (bitemporal) describe(p *Plan) string {
	return streamDescription(p, "bitemporal history: one row per version (__START_AT inclusive, __END_AT exclusive, by SEQUENCE BY) and per stretch of system time it was believed (__SYSTEM_START_AT inclusive, __SYSTEM_END_AT exclusive, by SYSTEM SEQUENCE BY); NULL ends are open")
}

func (bitemporal) view(p *Plan, hint time.Time, _ string) (string, error) {
	return render.BitemporalView(p.Flow, p.Loc, hint)
}

func (bitemporal) maintainEvery(every time.Duration) time.Duration {
	return historyMaintainEvery(every)
}

func (bitemporal) stateColumns(b *flow.Bound) schema.Columns { return historyStateColumns(b) }
