package plan

import (
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// kinds is the dispatch table: each flow.Kind's plan, one file each. A new
// kind is a row here and its file.
var kinds = map[flow.Kind]kind{
	flow.SCD1:         scd1{},
	flow.SCD2:         scd2{},
	flow.Bitemporal:   bitemporal{},
	flow.SnapshotSCD1: snapshot{target: render.Current, what: "current state (SCD type 1): the rows of the newest snapshot applied or loaded since, one per key"},
	flow.SnapshotSCD2: snapshot{target: render.History, what: "history (SCD type 2): one row per version; __START_AT inclusive, __END_AT exclusive (snapshot versions), NULL for the current version"},
}
