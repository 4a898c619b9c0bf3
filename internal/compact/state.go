package compact

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"cloud.google.com/go/bigquery"
)

// Labels a run leaves on a flow's state table (after its last step, as a
// metadata update, which is not a query job). They are hints: the state
// table's own marker rows are the truth, and a label may lag them (a run
// that crashed after its fold leaves the previous labels), never lead them,
// so a run that trusts a label at worst folds some rows again.
const (
	labelWatermark = "bqcdc-wm-us"       // the run's watermark, µs
	labelFoldedMax = "bqcdc-fm-us"       // newest _cdc_ingested_at folded, µs
	labelSig       = "bqcdc-sig"         // changelog metadata signature the run started from
	labelSigSeen   = "bqcdc-sig-seen-us" // when that signature was first seen, µs
	labelClean     = "bqcdc-clean"       // "1": the run folded every row the signature reflects
	labelChecked   = "bqcdc-checked-us"  // when a query last checked the flow, µs
)

// labels is what a state table's labels say.
type labels struct {
	known                bool // a run wrote them (watermark and folded max are usable)
	watermark, foldedMax time.Time
	sig                  string
	sigSeen, checked     time.Time
	clean                bool
}

func readLabels(l map[string]string) labels {
	us := func(k string) (time.Time, bool) {
		v, err := strconv.ParseInt(l[k], 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		return time.UnixMicro(v).UTC(), true
	}
	var out labels
	var okW, okF bool
	out.watermark, okW = us(labelWatermark)
	out.foldedMax, okF = us(labelFoldedMax)
	out.known = okW && okF
	out.sig = l[labelSig]
	out.sigSeen, _ = us(labelSigSeen)
	out.checked, _ = us(labelChecked)
	out.clean = l[labelClean] == "1"
	return out
}

func (l labels) update(upd *bigquery.TableMetadataToUpdate) {
	us := func(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }
	upd.SetLabel(labelWatermark, us(l.watermark))
	upd.SetLabel(labelFoldedMax, us(l.foldedMax))
	upd.SetLabel(labelSig, l.sig)
	upd.SetLabel(labelSigSeen, us(l.sigSeen))
	upd.SetLabel(labelChecked, us(l.checked))
	if l.clean {
		upd.SetLabel(labelClean, "1")
	} else {
		upd.SetLabel(labelClean, "0")
	}
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
