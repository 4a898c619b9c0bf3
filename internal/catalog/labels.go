package catalog

import (
	"strconv"
	"time"
)

// Labels bqcdc leaves on its objects. They are hints that save a query or a
// read, never the truth: what a state table's rows say wins over its
// labels, which may lag them (a run that crashed after its fold leaves the
// previous labels) but never lead them, so trusting one at worst repeats
// some work.

// SpecLabel is on every table and view bqcdc apply makes: a hash of what
// apply wanted of it (schema, description, partitioning, clustering,
// labels; a view's query and column descriptions), written in the same
// metadata update that made the object so. A second apply lists each
// dataset's tables with their labels (a request per 1,000 objects) and
// leaves alone every object whose label is the hash of what it wants now,
// without reading it. Whatever else changes such an object (compaction,
// ingest adding columns) either writes the label it computes the same way
// or only adds to what was wanted, so the label never says "as wanted" of
// an object that is less than wanted; a hand edit is found by
// `bqcdc apply --verify`, which reads every object.
const SpecLabel = "bqcdc-spec"

// A flow's view.
const (
	// ViewHintLabel holds the pruning bound the view was rendered with
	// (microseconds since the epoch), so the view can be rendered again
	// with the same bound without reading the state table.
	ViewHintLabel = "bqcdc-hint-us"
	// ViewVersionLabel holds the version key a snapshot flow's view's
	// constant bound was rendered with.
	ViewVersionLabel = "bqcdc-version-key"
	// ViewFunctionsLabel holds a hash of the DDL of the flow's table
	// functions as last applied.
	ViewFunctionsLabel = "bqcdc-functions"
	// FunctionsHintLabel holds the pruning bound (µs) the flow's table
	// functions were made with, where they read one (plan's
	// FunctionsBounded): apply keeps it, compaction advances it now and
	// then.
	FunctionsHintLabel = "bqcdc-functions-hint-us"
)

// A flow's state table, written after each compaction run (a metadata
// update, not a query job).
const (
	LabelWatermark  = "bqcdc-wm-us"       // the run's watermark, µs
	LabelFoldedMax  = "bqcdc-fm-us"       // newest _cdc_ingested_at folded, µs
	LabelSignature  = "bqcdc-sig"         // changelog metadata signature the run started from
	LabelSigSeen    = "bqcdc-sig-seen-us" // when that signature was first seen, µs
	LabelClean      = "bqcdc-clean"       // "1": the run folded every row the signature reflects
	LabelChecked    = "bqcdc-checked-us"  // when a query last checked the flow, µs
	LabelMaintained = "bqcdc-maint-us"    // when the state's levels were last folded into one, µs
	// LabelReached: the run found every changelog row ingested by then
	// folded (µs): with the append ledger (AppendsTable), a flow is idle
	// while no ledger row of its source reaches past it.
	LabelReached = "bqcdc-reached-us"
	// LabelFeedOff: "1" while a flow whose kind has a change feed runs with
	// it off (its target's TBLPROPERTIES): maintenance then reduces events
	// the feed's later positions would need, so a feed turned on again is
	// rebuilt from an empty change table, not continued.
	LabelFeedOff = "bqcdc-feed-off"
	// LabelGoldRows: the rows a materialized view's state held after its
	// last maintenance (its DELETE waits until the state has grown past
	// them by a share: compact.Options.GoldMaintainGrowth). The state's
	// position is LabelWatermark.
	LabelGoldRows = "bqcdc-gold-rows"
	// LabelHistory: "1" on an SCD 1 state whose history holds every event
	// from the flow's first (sql/render/history.go): made so, or filled
	// once by bqcdc apply from the changelog.
	LabelHistory = "bqcdc-history"
	// LabelLatenessHorizon: the lateness horizon, in days, a state's flow
	// was last applied or compacted with (flow.LatenessHorizonProperty;
	// left as it was when the flow drops it). Maintenance drops events older than the
	// horizon for good, so bqcdc apply says so when a flow's horizon is
	// new to its state or shorter than the label's, before the next
	// maintenance drops anything.
	LabelLatenessHorizon = "bqcdc-lateness-horizon-days"
)

// ChangelogExpiredLabel on a changelog records the day before which its
// rows were deleted, so a source costs one DELETE a day, not one a run.
const ChangelogExpiredLabel = "bqcdc-expired-before-us"

// Times in labels (the labels whose names end in -us) are microseconds
// since the epoch in decimal: label values are lower-case letters, digits,
// dashes and underscores, at most 63 characters.

// MicrosLabel is t as a label value.
func MicrosLabel(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// LabelMicros reads a time label's value (false when it is missing or not
// one).
func LabelMicros(v string) (time.Time, bool) {
	us, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us).UTC(), true
}
