package flow

import (
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/limits"
)

// What catalog names a flow's and a materialized view's objects by
// (catalog.Flow, catalog.Gold, catalog.Shaped): catalog sits below this
// package, so it asks through interfaces.

// TargetName is the target's dataset ("" for the default) and table.
func (f *Flow) TargetName() (dataset, table string) { return f.Target.Dataset, f.Target.Table }

// SourceTopic is the topic a change-stream flow reads ("" for a snapshot
// flow).
func (f *Flow) SourceTopic() string { return f.Source.Name }

// SnapshotName is the table a snapshot flow reads ("", "" for a
// change-stream flow).
func (f *Flow) SnapshotName() (dataset, table string) {
	if f.Snapshot == nil {
		return "", ""
	}
	return f.Snapshot.Dataset, f.Snapshot.Table
}

// GoldName is the materialized view's dataset ("" for the default) and
// table.
func (g *Gold) GoldName() (dataset, table string) { return g.Name.Dataset, g.Name.Table }

// Shape is the bound flow's columns, for the layouts of its tables.
func (b *Bound) Shape() catalog.Shape {
	return catalog.Shape{
		Changelog:      b.Changelog,
		Keys:           b.Keys,
		Sequence:       b.Sequence,
		SequenceStruct: b.SequenceStruct,
		SystemSequence: b.SystemSequence,
		Output:         b.Output,
		SCDType:        b.SCDType,
		Snapshot:       b.IsSnapshot(),
	}
}

// CheckNames refuses a flow whose objects' names would exceed BigQuery's
// limits: the target's view, state and change tables (limits.MaxTableIDBytes)
// and its table functions (limits.MaxRoutineIDChars), at the target's
// file:line:column. BigQuery would refuse the object at apply time, after
// the flow's other objects were made. Bind checks it first.
func CheckNames(f *Flow) *Error {
	tables := []string{catalog.ViewName(f), catalog.StateName(f)}
	k := f.Kind()
	if k.ChangeFeed() {
		tables = append(tables, catalog.ChangesName(f))
	}
	var routines []string
	for _, suffix := range k.Routines() {
		routines = append(routines, catalog.RoutineName(f, suffix))
	}
	for _, t := range tables {
		if len(t) > limits.MaxTableIDBytes {
			return f.errorf("target is too long: its table %s… would have %d bytes; BigQuery allows %d in a table id", t[:40], len(t), limits.MaxTableIDBytes)
		}
	}
	for _, r := range routines {
		if n := utf8.RuneCountInString(r); n > limits.MaxRoutineIDChars {
			return f.errorf("target is too long: its table function %s… would have %d characters; BigQuery allows %d in a routine id (shorten the target to at most %d characters)",
				string([]rune(r)[:40]), n, limits.MaxRoutineIDChars, limits.MaxRoutineIDChars-(n-utf8.RuneCountInString(f.Target.Table)))
		}
	}
	return nil
}

func (f *Flow) errorf(format string, args ...any) *Error {
	e := Errorf(f.Target.Pos, format, args...)
	e.Flow = f.Name
	return e
}
