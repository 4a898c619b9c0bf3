package compact

import (
	"fmt"
	"hash/fnv"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
)

// labels is what a state table's labels say (catalog.Label*). They are
// hints: the state table's own marker rows are the truth, and a label may
// lag them (a run that crashed after its fold leaves the previous labels),
// never lead them, so a run that trusts a label at worst folds some rows
// again.
type labels struct {
	known                bool // a run wrote them (watermark and folded max are usable)
	watermark, foldedMax time.Time
	sig                  string
	sigSeen, checked     time.Time
	clean                bool
	maintained           time.Time // zero: never
	reached              time.Time // every changelog row ingested by then was folded (zero: unknown)
	layout               bool      // the state is of catalog.StateLayout (its change table exists)
	// feedOff: a run had the flow's change feed off, or held it after
	// (catalog.LabelFeedOff: "1"); "0" clears a "1" (BigQuery merges
	// labels on update), "" writes nothing.
	feedOff string
	// history: catalog.LabelHistory's value ("1": an SCD 1 state's history
	// is whole; "0": it is not; "" writes nothing).
	history string
	// horizon: catalog.LabelLatenessHorizon's value: the flow's horizon
	// when it has one (the policy the run folded under), else as read
	// ("" writes nothing).
	horizon string
}

func readLabels(l map[string]string) labels {
	us := func(k string) (time.Time, bool) { return catalog.LabelMicros(l[k]) }
	var out labels
	var okW, okF bool
	out.watermark, okW = us(catalog.LabelWatermark)
	out.foldedMax, okF = us(catalog.LabelFoldedMax)
	out.known = okW && okF
	out.sig = l[catalog.LabelSignature]
	out.sigSeen, _ = us(catalog.LabelSigSeen)
	out.checked, _ = us(catalog.LabelChecked)
	out.maintained, _ = us(catalog.LabelMaintained)
	out.reached, _ = us(catalog.LabelReached)
	out.clean = l[catalog.LabelClean] == "1"
	out.layout = l[catalog.StateLayoutLabel] == catalog.StateLayout
	out.feedOff = l[catalog.LabelFeedOff]
	out.history = l[catalog.LabelHistory]
	out.horizon = l[catalog.LabelLatenessHorizon]
	return out
}

// values renders the labels for a metadata update. The layout label is
// repeated: the emulator replaces every label on a label update (BigQuery
// merges them).
func (l labels) values() map[string]string {
	us := catalog.MicrosLabel
	out := map[string]string{
		catalog.LabelWatermark: us(l.watermark),
		catalog.LabelFoldedMax: us(l.foldedMax),
		catalog.LabelSignature: l.sig,
		catalog.LabelSigSeen:   us(l.sigSeen),
		catalog.LabelChecked:   us(l.checked),
		catalog.LabelClean:     "0",
	}
	if l.clean {
		out[catalog.LabelClean] = "1"
	}
	if !l.maintained.IsZero() {
		out[catalog.LabelMaintained] = us(l.maintained)
	}
	if !l.reached.IsZero() {
		out[catalog.LabelReached] = us(l.reached)
	}
	if l.layout {
		out[catalog.StateLayoutLabel] = catalog.StateLayout
	}
	if l.feedOff != "" {
		out[catalog.LabelFeedOff] = l.feedOff
	}
	if l.history != "" {
		out[catalog.LabelHistory] = l.history
	}
	if l.horizon != "" {
		out[catalog.LabelLatenessHorizon] = l.horizon
	}
	return out
}

// signature hashes what table metadata says of a changelog's content: any
// append, committed or still in the streaming buffer, and any delete
// changes one of these. (The BigQuery emulator updates the row count only;
// BigQuery reports Storage Write appends in the streaming buffer first.)
func signature(md *bigquery.TableMetadata) string {
	if md == nil {
		return ""
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%d/%s", md.NumRows, md.NumBytes, md.LastModifiedTime.UnixMicro(), md.ETag)
	if sb := md.StreamingBuffer; sb != nil {
		fmt.Fprintf(h, "/%d/%d/%d", sb.EstimatedRows, sb.EstimatedBytes, sb.OldestEntryTime.UnixMicro())
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// idle reports whether a flow needs no query: its changelog's signature is
// the one its last run left clean, and a query checked it recently enough.
func (c *Compactor) idle(l labels, sig string, now time.Time) bool {
	if !l.known || !l.clean || sig == "" || l.sig != sig {
		return false
	}
	return c.opts.FullCheckEvery < 0 || now.Sub(l.checked) < c.opts.FullCheckEvery
}

// stateEmpty reports whether a state table's metadata says it holds no row
// (a table that does not exist yet holds none).
func stateEmpty(md *bigquery.TableMetadata) bool {
	if md == nil {
		return true
	}
	if sb := md.StreamingBuffer; sb != nil && sb.EstimatedRows > 0 {
		return false
	}
	return md.NumRows == 0
}
