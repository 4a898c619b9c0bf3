package flow

import "github.com/bqcdc/bqcdc/internal/catalog"

// Kind is what a flow makes. The kinds differ in their state layout, their
// view and the table functions and tables beside it; what tells them apart
// is asked here (Kind's methods) rather than re-derived from the clauses
// (Snapshot, SCDType, Bitemporal) at every place that cares.
type Kind uint8

// The kinds. The zero Kind is none: a Flow's Kind is always one of these.
const (
	_            Kind = iota
	SCD1              // a change stream folded to the current state
	SCD2              // a change stream folded to its history
	Bitemporal        // a change stream folded to its history in business and system time
	SnapshotSCD1      // snapshots of a table, as the newest one's rows
	SnapshotSCD2      // snapshots of a table, as a history by version
)

var kindNames = [...]string{SCD1: "scd1", SCD2: "scd2", Bitemporal: "bitemporal", SnapshotSCD1: "snapshot-scd1", SnapshotSCD2: "snapshot-scd2"}

// String is the kind's short name (scd1, scd2, bitemporal, snapshot-scd1,
// snapshot-scd2), as logs and benchmarks spell it.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "invalid"
}

// Kind is the flow's kind.
func (f *Flow) Kind() Kind {
	switch {
	case f.Snapshot != nil && f.SCDType == 2:
		return SnapshotSCD2
	case f.Snapshot != nil:
		return SnapshotSCD1
	case f.Bitemporal:
		return Bitemporal
	case f.SCDType == 2:
		return SCD2
	default:
		return SCD1
	}
}

// Snapshot reports a snapshot flow: it reads a table, not a topic, and
// keeps its own state layout.
func (k Kind) Snapshot() bool { return k == SnapshotSCD1 || k == SnapshotSCD2 }

// History reports a target of versions (__START_AT, __END_AT).
func (k Kind) History() bool { return k == SCD2 || k == Bitemporal || k == SnapshotSCD2 }

// ChangeFeed reports a flow with a materialized change feed: a change table
// beside its state, <target>_changes over it and <target>_at. Snapshot
// flows' history is by version, not by ingestion time, and a bitemporal
// target is time travel already (<target>_as_of).
func (k Kind) ChangeFeed() bool { return k == SCD1 || k == SCD2 }

// Routines are the suffixes of the table functions beside the flow's view
// (catalog.AtSuffix, ...), in the order apply makes them.
func (k Kind) Routines() []string {
	switch {
	case k.ChangeFeed():
		return []string{catalog.AtSuffix, catalog.ChangesSuffix}
	case k == Bitemporal:
		return []string{catalog.AsOfSuffix}
	}
	return nil
}

// ChangeFeed reports whether the flow has a materialized change feed: its
// kind has one (Kind.ChangeFeed) and its target's declaration does not turn
// it off. Without it a compaction run reads no state.
func (f *Flow) ChangeFeed() bool { return f.Kind().ChangeFeed() && !f.NoChangeFeed }

// ChangeFeedOff reports a flow whose kind has a change feed that its
// target's declaration turns off (TBLPROPERTIES).
func (f *Flow) ChangeFeedOff() bool { return f.Kind().ChangeFeed() && f.NoChangeFeed }

// Routines are the suffixes of the table functions apply makes beside the
// flow's view: its kind's (Kind.Routines), but <target>_changes when its
// change feed is off.
func (f *Flow) Routines() []string {
	var out []string
	for _, r := range f.Kind().Routines() {
		if r == catalog.ChangesSuffix && !f.ChangeFeed() {
			continue
		}
		out = append(out, r)
	}
	return out
}

// ChangelogSource is the source topic whose changelog the flow reads, and
// false for a flow that reads no changelog (a snapshot flow reads the
// user's table). Code that concerns changelogs (their tables, tails,
// retention, freshness) asks this rather than which kind the flow is.
func (f *Flow) ChangelogSource() (string, bool) {
	if f.Kind().Snapshot() {
		return "", false
	}
	return f.Source.Name, true
}

// Reads names what the flow reads, as users name it: its source topic, or
// a snapshot flow's table (dataset.table).
func (f *Flow) Reads() string {
	if f.Kind().Snapshot() {
		return f.Snapshot.String()
	}
	return f.Source.Name
}
