package plan

import (
	"time"

	"github.com/bqcdc/bqcdc/sql/render"
)

// scd1 is a change stream folded to the current state: one row per key
// present now (render.CurrentView), with <target>_at and <target>_changes.
type scd1 struct{ stream }

func (scd1) shape() render.Shape { return render.Current }

func (scd1) describe(p *Plan) string {
	return streamDescription(p, "current state (SCD type 1): one row per key present now")
}

func (scd1) view(p *Plan, hint time.Time, _ string) (string, error) {
	return render.CurrentView(p.Flow, p.Loc, hint)
}
