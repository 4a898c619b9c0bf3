package render

import (
	"fmt"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Sparse rows: a state of versions (SCD 2, bitemporal) keeps every event,
// because a late event can re-cut the versions around it. Most events of a
// long history open no version (they change columns outside TRACK HISTORY
// ON, or nothing), and stored whole each would bill a full row to every
// read of the view. Maintenance, which reads every level of a key anyway,
// stores such an event sparse: its sparse columns (writeColumns) NULL
// where they equal the full row that opened its group of events (its
// base), and __base (catalog.ColStateBase) naming that row by its identity
// (stateIdentity). Every read of the state rebuilds the rows first
// (the "rebuilt" template), so what the folds see is the events as they
// came, whatever was stored sparse.
//
// Exactness rests on these choices:
//   - The base is named, not found by position: a late event folded later
//     between a base and its sparse rows does not change what they mean.
//     Its identity is its message id and ingestion time (two rows alike in
//     both are copies of one row), which no edit of the flow changes; a
//     row without a message id is never a base.
//   - An event whose sparse column is NULL where its base's is not is
//     stored whole (a NULL in a sparse row means "as the base"; with no
//     bitmask there is no way to say "NULL" instead). Such events are rare
//     but for IGNORE NULL UPDATES, where they already store NULLs.
//   - Only columns whose equality can mean the same value are written
//     sparse (schema.Column.Groupable, and FLOAT64 compared with the sign
//     of a zero: 0 = -0; no arrays, JSON, geography or structs holding
//     them); keys, sequences, the system sequence, the message id, the
//     ingestion time and the bookkeeping columns are always stored, so
//     every filter, window and dedup of the state sees them.
//   - The rebuild fills every column that may ever have been written
//     sparse (rebuildColumns: the sequences too, which are never NULL), so
//     a flow whose SEQUENCE BY later names a column written sparse still
//     reads it. (A flow whose KEYS come to name one does not: its keys
//     partition the rebuild. Changing a flow's keys means a new state.)
//
// A base and its sparse rows are written by one statement into one level
// and for one key, so every filter the reads apply to the state before
// rebuilding (generation, key ranges, buckets, op) keeps both or neither;
// filters that could separate them (ingestion time, message id) are
// applied after.

// sparseCol is a column an event that opens no version may store as NULL
// when it equals its base's; Base names the base's value in the rebuild.
type sparseCol struct {
	Column string
	Name   string // quoted
	Base   string // the base's value, __bN
	Same   string // "the value is the base's", exactly
}

// rebuildColumns are the event columns of b that a sparse row may hold
// as NULL for its base's value: not keys, the message id or the ingestion
// time, and of a type whose equality can be identity. writeColumns are
// those maintenance writes sparse now: not the sequences (ordered on in
// every window) or the system sequence.
func rebuildColumns(b *flow.Bound) []sparseCol {
	var out []sparseCol
	for _, c := range catalog.EventColumns(b) {
		_, key := b.Keys.Lookup(c.Name)
		float := c.Type == schema.Float64 && !c.Repeated
		if key || c.Name == catalog.ColMessageID || c.Name == catalog.ColIngestedAt || !c.Groupable() && !float {
			continue
		}
		s := sparseCol{Column: c.Name, Name: q(c.Name), Base: fmt.Sprintf("__b%d", len(out))}
		s.Same = fmt.Sprintf("%s IS NOT DISTINCT FROM %s", s.Name, s.Base)
		if float {
			// 0 = -0: the sign of a zero tells them apart.
			s.Same = fmt.Sprintf("(%s AND (%s IS NULL OR %s != 0 OR IEEE_DIVIDE(1, %s) = IEEE_DIVIDE(1, %s)))", s.Same, s.Name, s.Name, s.Name, s.Base)
		}
		out = append(out, s)
	}
	return out
}

func writeColumns(b *flow.Bound, rebuild []sparseCol) []sparseCol {
	seq := map[string]bool{}
	for _, c := range b.Sequence {
		seq[c.Name] = true
	}
	if b.SystemSequence != nil {
		seq[b.SystemSequence.Name] = true
	}
	var out []sparseCol
	for _, c := range rebuild {
		if !seq[c.Column] {
			out = append(out, c)
		}
	}
	return out
}

// stateIdentity is a state row's identity among its key's rows: its
// message id and ingestion time, as a fingerprint (two rows alike in both
// are copies of one changelog row). A sparse row's __base is its base's
// identity.
const stateIdentity = "FARM_FINGERPRINT(TO_JSON_STRING(STRUCT(`" + catalog.ColMessageID + "`, UNIX_MICROS(`" + catalog.ColIngestedAt + "`))))"

// sparse fills what writing and rebuilding sparse rows needs, for a
// target of versions.
func (d *data) sparse(b *flow.Bound, events schema.Columns) {
	rebuild := rebuildColumns(b)
	d.Sparse, d.Rebuild = writeColumns(b, rebuild), rebuild
	if len(d.Sparse) == 0 {
		d.Rebuild = nil
		return
	}
	d.StoredBase = ", " + q(catalog.ColStateBase)
	d.Identity = stateIdentity
	rebuilt, same := map[string]string{}, map[string]string{}
	for _, s := range d.Rebuild {
		rebuilt[s.Name] = s.Base
	}
	for _, s := range d.Sparse {
		same[s.Name] = s.Same
	}
	d.Rebuilt, d.Sparsed = d.Rebuilt[:0], d.Sparsed[:0]
	for _, c := range events {
		name := q(c.Name)
		if bn, ok := rebuilt[name]; ok {
			d.Rebuilt = append(d.Rebuilt, fmt.Sprintf("IF(%s IS NULL, %s, IFNULL(%s, %s)) AS %s", q(catalog.ColStateBase), name, name, bn, name))
		} else {
			d.Rebuilt = append(d.Rebuilt, name)
		}
		if sm, ok := same[name]; ok {
			d.Sparsed = append(d.Sparsed, fmt.Sprintf("IF(__sparse AND %s, NULL, %s)", sm, name))
		} else {
			d.Sparsed = append(d.Sparsed, name)
		}
	}
}

// rebuiltFrom is the rebuild of the stored state rows of CTE From: the
// template's dot.
type rebuiltFrom struct {
	*data
	From string
}

func rebuilt(d *data, from string) rebuiltFrom { return rebuiltFrom{data: d, From: from} }

// SparseColumns names the columns that maintenance may store as NULL in a
// sparse row of flow b's state, when b's target is of versions (the cost
// benchmarks model a state by them).
func SparseColumns(b *flow.Bound) []string {
	var out []string
	for _, c := range writeColumns(b, rebuildColumns(b)) {
		out = append(out, c.Column)
	}
	return out
}
