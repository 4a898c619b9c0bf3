package flow

import (
	"fmt"
	"strings"
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
	}
}

// Object is a name an object of a deployment takes: its dataset ("" for
// the default one), its table or routine id, and what it is.
type Object struct {
	Dataset, Name string
	What          string // "view", "state table", "table function", ...
	Routine       bool   // a table function (its id has a routine's limits)
}

// Objects lists every object the flow makes, as catalog names them: its
// view, state table, change table and table functions (its kind says
// which). It is the one list of them: names are claimed (ParseFilesAll)
// and checked (CheckNames) from it.
func (f *Flow) Objects() []Object {
	ds := f.Target.Dataset
	out := []Object{{ds, catalog.ViewName(f), "view", false}, {ds, catalog.StateName(f), "state table", false}}
	k := f.Kind()
	if !k.Snapshot() {
		out = append(out, Object{ds, catalog.StateCopyName(f), "state copy (while the state's partitioning changes)", false})
	}
	if k.ChangeFeed() {
		out = append(out, Object{ds, catalog.ChangesName(f), "change table", false})
	}
	for _, suffix := range k.Routines() {
		out = append(out, Object{ds, catalog.RoutineName(f, suffix), "table function", true})
	}
	return out
}

// Objects lists every object the materialized view may make: its view,
// and for a view compaction refreshes its state, refreshed view, change
// feed and (with WATERMARK) final windows (all are claimed: whether it is
// refreshed is known only once it is bound).
func (g *Gold) Objects() []Object {
	ds := g.Name.Dataset
	return []Object{{ds, g.Name.Table, "materialized view", false},
		{ds, catalog.GoldStateName(g), "state table", false},
		{ds, catalog.GoldRefreshedName(g), "refreshed view", false},
		{ds, catalog.GoldChangesName(g), "table function", true},
		{ds, catalog.GoldFinalName(g), "final windows table", false},
		{ds, catalog.GoldFinalViewName(g), "final windows view", false}}
}

// CheckNames refuses a flow whose objects' names would exceed BigQuery's
// limits: the target's view, state and change tables (limits.MaxTableIDBytes)
// and its table functions (limits.MaxRoutineIDChars), at the target's
// file:line:column. BigQuery would refuse the object at apply time, after
// the flow's other objects were made. Bind checks it first.
func CheckNames(f *Flow) *Error {
	for _, o := range f.Objects() {
		if !o.Routine && len(o.Name) > limits.MaxTableIDBytes {
			return f.errorf("target is too long: its table %s… would have %d bytes; BigQuery allows %d in a table id", o.Name[:40], len(o.Name), limits.MaxTableIDBytes)
		}
		if n := utf8.RuneCountInString(o.Name); o.Routine && n > limits.MaxRoutineIDChars {
			return f.errorf("target is too long: its table function %s… would have %d characters; BigQuery allows %d in a routine id (shorten the target to at most %d characters)",
				string([]rune(o.Name)[:40]), n, limits.MaxRoutineIDChars, limits.MaxRoutineIDChars-(n-utf8.RuneCountInString(f.Target.Table)))
		}
	}
	return nil
}

// reservedName says why a target or materialized view may not take name
// ("" when it may): the prefix of the deployment's own tables, a suffix
// of the tables bqcdc keeps beside a target, or (in the default dataset)
// a changelog's.
func reservedName(dataset, name string) string {
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, catalog.ReservedPrefix) {
		return fmt.Sprintf("names starting with %s are bqcdc's own tables", catalog.ReservedPrefix)
	}
	for _, suffix := range catalog.ReservedSuffixes() {
		if strings.HasSuffix(lower, suffix) {
			return fmt.Sprintf("names ending with %s are the tables bqcdc keeps beside a target (%s of %s)", suffix, strings.TrimPrefix(suffix, "__"), name[:len(name)-len(suffix)])
		}
	}
	if dataset == "" && strings.HasSuffix(lower, catalog.ChangelogSuffix) {
		return fmt.Sprintf("names ending with %s in the default dataset are changelog tables", catalog.ChangelogSuffix)
	}
	return ""
}

func (f *Flow) errorf(format string, args ...any) *Error {
	e := Errorf(f.Target.Pos, format, args...)
	e.Flow = f.Name
	return e
}
