// Package render generates every statement bqcdc runs or shows, from the
// templates in templates/ (golden copies in testdata/golden). It renders
// what it is asked for and never asks which kind a flow is: each flow's
// plan (internal/plan) picks the functions and the Shape (Current,
// History) that make its kind.
//
//   - views: CurrentView (SCD 1), HistoryView (SCD 2), BitemporalView,
//     SnapshotView; and the table functions AtFunction, ChangesFunction,
//     AsOfFunction (render.go, snapshot.go), with their bodies as queries
//     (AtQuery, ChangesQuery, AsOfQuery) for tests;
//   - a compaction run's statements: Compaction (statistics, the level it
//     folds, the change feed it materializes, maintenance, changelog
//     expiry) and SnapshotCompaction (snapshot application);
//   - a materialized view's view, state, refresh, maintenance, change feed
//     and final windows (gold.go, goldstate.go);
//   - the status view and the table of flows it reads (status.go), and the
//     reference events the tests read views with (EventsQuery).
//
// Every view reads the flow's state table (what compaction has folded) plus
// the tail of the changelog ingested after the state's watermark, and folds
// both with the same logic, so it returns the same rows before, during and
// after a compaction. The SQL is built from names resolved against the
// changelog schema (see package flow); every identifier is quoted and no
// user value is spliced in unescaped.
package render

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

//go:embed templates/*.sql.tmpl
var templateFS embed.FS

var templates *template.Template

// The templates are parsed in init, not in templates' initializer: their
// "run" function reads templates, which an initializer could not.
func init() { templates = parseTemplates() }

// parseTemplates parses the embedded templates, each under its file name,
// after writing every {{col "Name"}} as the column's name from catalog: the
// names cost nothing at render time (a template function would be called,
// through reflection, about 130 times a flow). An unknown name panics here,
// when the package loads, so any test of the package catches it.
func parseTemplates() *template.Template {
	t := template.New("").Funcs(template.FuncMap{
		"join":    func(list []string, sep string) string { return strings.Join(list, sep) },
		"comment": commentText,
		"rebuilt": rebuilt,
		// run executes the template a Shape names (text/template's own
		// {{template}} takes a constant name only).
		"run": func(name string, data any) (string, error) {
			var b strings.Builder
			err := templates.ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
	})
	files, err := fs.Glob(templateFS, "templates/*.sql.tmpl")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(templateFS, f)
		if err != nil {
			panic(err)
		}
		var bad error
		text := colAction.ReplaceAllStringFunc(string(b), func(a string) string {
			m := colAction.FindStringSubmatch(a)
			c, err := column(m[1], m[2])
			if err != nil && bad == nil {
				bad = fmt.Errorf("%s: %w", f, err)
			}
			return c
		})
		if bad != nil {
			panic(bad)
		}
		template.Must(t.New(path.Base(f)).Parse(typographicComments(text)))
	}
	return t
}

// colAction is how a template names a stored column, {{col "IngestedAt"}},
// or a column of a result compaction decodes, {{out "Events"}}.
var colAction = regexp.MustCompile(`\{\{(col|out) "([A-Za-z]+)"\}\}`)

// columns are the stored columns the templates name, by the name of their
// catalog constant without "Col": catalog owns every name, and a template
// writes {{col "IngestedAt"}}, never the name itself.
var columns = map[string]string{
	"Op": catalog.ColOp, "SourceTS": catalog.ColSourceTS, "Sequence": catalog.ColSequence,
	"IngestedAt": catalog.ColIngestedAt, "PublishTime": catalog.ColPublishTime, "MessageID": catalog.ColMessageID,
	"SchemaID": catalog.ColSchemaID, "Transaction": catalog.ColTransaction,
	"StateOp": catalog.ColStateOp, "StateGen": catalog.ColStateGen, "StateWatermark": catalog.ColStateWatermark,
	"StateBucket": catalog.ColStateBucket, "StateBase": catalog.ColStateBase, "StateVersion": catalog.ColStateVersion, "StateVersionEnd": catalog.ColStateVersionEnd, "StateRows": catalog.ColStateRows,
	"CommitPosition": catalog.ColCommitPosition, "ChangeType": catalog.ColChangeType,
	"GoldGroup": catalog.ColGoldGroup, "GoldHash": catalog.ColGoldHash, "GoldVersion": catalog.ColGoldVersion,
	"GoldEventMax": catalog.ColGoldEventMax,
}

// column is the name a {{col "Name"}} or {{out "Name"}} stands for.
func column(action, name string) (string, error) {
	names := columns
	if action == "out" {
		names = outputs
	}
	if c, ok := names[name]; ok {
		return c, nil
	}
	return "", fmt.Errorf("template names an unknown column {{%s %q}}", action, name)
}

// commentText makes s safe inside a "--" comment line: a line break (or
// any control character, and U+0085, U+2028, U+2029) in a flow file's name
// would end the comment and put the rest of the name in the SQL, so each
// is written as a \x or \u escape, as is a byte that is not UTF-8; an
// unpaired apostrophe is written as a typographic one.
func commentText(s string) string {
	if strings.Count(s, "'")%2 == 1 {
		// An unpaired quote would start a string literal to the emulator's
		// text rewrites (concession 17); a paired one, as in a flow's
		// WHERE op = 'D', reads as one there too.
		s = strings.ReplaceAll(s, "'", "’")
	}
	if utf8.ValidString(s) && !strings.ContainsFunc(s, breaksComment) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case !breaksComment(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
		i += n
	}
	return b.String()
}

// typographicComments writes the apostrophes of a template's comment lines
// as typographic ones: the BigQuery emulator takes an ASCII quote in a
// comment for the start of a string literal (internal/emulator, concession
// 17); BigQuery reads the comment the same either way.
func typographicComments(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if templateComment.MatchString(l) {
			lines[i] = strings.ReplaceAll(l, "'", "’")
		}
	}
	return strings.Join(lines, "")
}

// templateComment matches a template line that is a comment, after any
// actions that open it ({{define "x"}}  -- ...).
var templateComment = regexp.MustCompile(`^\s*(?:\{\{[^}]*\}\}\s*)*--`)

func breaksComment(r rune) bool {
	return r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029
}

// newSQLBuilder returns the builder a statement is rendered into. A
// strings.Builder hands its bytes over as the string without a copy, and a
// statement over a 20-column changelog is a few KiB, so starting there
// saves most of the regrowing.
func newSQLBuilder() *strings.Builder {
	var b strings.Builder
	b.Grow(4 << 10)
	return &b
}

// KeylessTruncates renders the UPDATE that brings a state table of an
// older layout to catalog.StateLayout: its truncate rows lose the key of
// the row that carried them (a truncate empties every key; the state keeps
// it under none, where a filter on NULL keys finds it). "" for a flow
// without APPLY AS TRUNCATE. Run once per state, it is billed as a DML
// UPDATE: the keys and op column of the whole state, and every column of
// the partitions that hold truncate rows.
func KeylessTruncates(b *flow.Bound, loc catalog.Location) string {
	if b.Truncate == "" {
		return ""
	}
	var set, null []string
	for _, k := range b.Keys {
		set = append(set, q(k.Name)+" = NULL")
		null = append(null, q(k.Name)+" IS NULL")
	}
	return fmt.Sprintf("UPDATE %s SET %s\nWHERE %s = 'T' AND NOT (%s)",
		loc.StateTable(b.Flow), strings.Join(set, ", "), catalog.ColStateOp, strings.Join(null, " AND "))
}

// CopyState renders the copy of a change-stream flow's state rows, of
// columns cols, from table from to table to (quoted): how a state moves to
// another partitioning, which BigQuery cannot change in place. With
// bucket, cols are every stored column but the bucket, and a state of
// buckets gets each row's bucket computed as the fold computes it (NULL on
// truncates and markers, which carry no key). A chunk copies the rows of
// its range of buckets (and, the last, of the NULL partition) only: one
// job modifies at most 4,000 partitions.
func CopyState(b *flow.Bound, from, to string, cols []string, bucket bool, chunk *BucketChunk) string {
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = q(c)
	}
	list, sel := strings.Join(quoted, ", "), strings.Join(quoted, ", ")
	of := q(catalog.ColStateBucket) // the row's bucket, stored
	if bucket && b.StateBuckets > 0 {
		of = fmt.Sprintf("IF(%s IN ('T', 'W', 'A'), NULL, %s)", q(catalog.ColStateOp), BucketOf(b, ""))
		list += ", " + q(catalog.ColStateBucket)
		sel += ", " + of
	}
	if b.StateKeyRange != nil {
		// The row's range, NULL for the rows of a NULL first key (the
		// markers' and truncates' among them): the last chunk's.
		of = RangeOf(b, "")
	}
	sql := fmt.Sprintf("INSERT INTO %s (%s)\nSELECT %s\nFROM %s", to, list, sel, from)
	var where []string
	if chunk != nil {
		in := fmt.Sprintf("%s BETWEEN %d AND %d", of, chunk.Lo, chunk.Hi)
		if chunk.Last {
			in = fmt.Sprintf("(%s OR %s IS NULL)", in, of)
		}
		where = append(where, in)
	}
	if (b.StateBuckets > 0 || b.StateKeyRange != nil) && b.Kind() == flow.SCD1 {
		// A state of buckets or key ranges keeps no history (history.go):
		// moved back, its history is filled again from the changelog,
		// marker included.
		where = append(where, fmt.Sprintf("%s >= %s", q(catalog.ColStateGen), Literal(ArchiveEnd)))
	}
	if len(where) > 0 {
		sql += "\nWHERE " + strings.Join(where, " AND ")
	}
	return sql
}

// FoldChunks are the ranges of n buckets a run's fold is written in, per
// buckets touched at most each: one nil range (one statement) when n is 0
// or the run touches at most per buckets; else contiguous ranges of [0,
// n), so a row the statistics did not see still falls in one.
func FoldChunks(n, per int, touched []int64) []*BucketChunk {
	sorted := slices.Sorted(slices.Values(touched))
	if n == 0 || len(sorted) <= per {
		return []*BucketChunk{nil}
	}
	var out []*BucketChunk
	for i := 0; i < len(sorted); i += per {
		lo := sorted[i]
		if i == 0 {
			lo = 0
		}
		if len(out) > 0 {
			out[len(out)-1].Hi = lo - 1
		}
		out = append(out, &BucketChunk{Lo: lo, Hi: int64(n - 1)})
	}
	out[len(out)-1].Last = true
	return out
}

// RangeOf is the SQL of the range of the key of a row (its first key
// column prefixed with alias and a dot, unless alias is "") in b's state
// partitioned by key range: a key below the range is the first range's, a
// key at or past its end the last's (the chunks of a statement keep them
// there), a NULL key NULL. The key is clamped into the range before the
// subtraction, which therefore cannot overflow (flow.KeyRange: its span
// fits an INT64).
func RangeOf(b *flow.Bound, alias string) string {
	r := b.StateKeyRange
	key := q(b.Keys[0].Name)
	if alias != "" {
		key = alias + "." + key
	}
	return fmt.Sprintf("DIV(LEAST(GREATEST(%s, %d), %d) - %d, %d)", key, r.Start, r.End-1, r.Start, r.Interval())
}

// ChunkedPartitions is the number of partitions the chunks of b's
// statements range over: its buckets, or its key ranges (0: neither, one
// statement).
func ChunkedPartitions(b *flow.Bound) int {
	if r := b.StateKeyRange; r != nil {
		return int(r.Partitions())
	}
	return b.StateBuckets
}

// PerJob is how many of ChunkedPartitions(b) one statement writes, of
// per partitions a job: of key ranges one less, for BigQuery's
// __UNPARTITIONED__ (the keys outside the range), which every statement
// may write beside the NULL partition.
func PerJob(b *flow.Bound, per int) int {
	if b.StateKeyRange != nil {
		return max(1, per-1)
	}
	return per
}

// keyRangesSQL is the filter on b's first key of its state's key ranges
// from pLo to pHi: the first range without a low end and the last
// without a high end, since they hold the keys below and past the state's
// range (RangeOf).
func keyRangesSQL(b *flow.Bound, pLo, pHi int64) string {
	r, key := b.StateKeyRange, q(b.Keys[0].Name)
	first, last := pLo <= 0, pHi >= r.Partitions()-1
	lo, hi := r.Start+pLo*r.Interval(), r.Start+(pHi+1)*r.Interval()-1
	switch {
	case first && last:
		return key + " IS NOT NULL"
	case first:
		return fmt.Sprintf("%s <= %d", key, hi)
	case last:
		return fmt.Sprintf("%s >= %d", key, lo)
	}
	return fmt.Sprintf("%s BETWEEN %d AND %d", key, lo, hi)
}

// rangeChunk is the filters of chunk ch of a state partitioned by key
// range: of the changelog's events, of the state's rows, and of
// maintenance's DELETE, each on the first key column itself, so BigQuery
// prunes the state's partitions by them. The first chunk has no low end
// and the last no high end (the keys outside the range, in
// __UNPARTITIONED__); keyed rows of a NULL first key (in the NULL
// partition, with the markers and truncates) are the first chunk's; every
// chunk reads the truncates and markers (NULL __key), the last deletes
// them.
func rangeChunk(b *flow.Bound, ch *BucketChunk, op string) (events, state, gc string) {
	key := q(b.Keys[0].Name)
	first, in := ch.Lo == 0, keyRangesSQL(b, ch.Lo, ch.Hi)
	markers := fmt.Sprintf("%s IS NULL AND %s IS NULL", key, q(catalog.ColStateKey))
	if first {
		events = fmt.Sprintf("(%s OR %s IS NULL OR %s = 'T')", in, key, op)
		state = fmt.Sprintf("(%s OR %s IS NULL)", in, key)
		gc = fmt.Sprintf("(%s OR %s IS NULL AND %s IS NOT NULL)", in, key, q(catalog.ColStateKey))
	} else {
		events = fmt.Sprintf("(%s OR %s = 'T')", in, op)
		state = fmt.Sprintf("(%s OR %s)", in, markers)
		gc = in
	}
	if ch.Last {
		gc = fmt.Sprintf("(%s OR %s)", gc, markers)
	}
	return events, state, gc
}

// EmptyTable deletes every row of table (quoted): a move's state copy, or
// the state it refills.
func EmptyTable(table string) string { return "DELETE FROM " + table + " WHERE TRUE" }

// BucketChunks are the ranges of n buckets one statement each writes (per
// buckets at most); one nil range when n is at most per.
func BucketChunks(n, per int) []*BucketChunk {
	if n <= per {
		return []*BucketChunk{nil}
	}
	var out []*BucketChunk
	for lo := 0; lo < n; lo += per {
		out = append(out, &BucketChunk{Lo: int64(lo), Hi: int64(min(lo+per, n) - 1), Last: lo+per >= n})
	}
	return out
}

// Epoch is the watermark of a state table that was never compacted.
var Epoch = time.Unix(0, 0).UTC()

// CurrentView renders the view of a change-stream flow's current state
// (SCD 1). hint is a watermark already committed to the state table
// (Epoch if none); it becomes the constant partition filter, so it must
// never exceed the current watermark.
func CurrentView(b *flow.Bound, loc catalog.Location, hint time.Time) (string, error) {
	d := newData(b, loc, hint, Current)
	d.TruncatesApart = d.HasTruncate
	return executeView("scd1.sql.tmpl", d, b)
}

// HistoryView renders the view of a change-stream flow's history (SCD 2);
// hint as for CurrentView.
func HistoryView(b *flow.Bound, loc catalog.Location, hint time.Time) (string, error) {
	return executeView("scd2.sql.tmpl", newData(b, loc, hint, History), b)
}

// BitemporalView renders the view of a bitemporal flow; hint as for
// CurrentView.
func BitemporalView(b *flow.Bound, loc catalog.Location, hint time.Time) (string, error) {
	if b.SystemSequence == nil {
		return "", fmt.Errorf("rendering view of flow %s: a bitemporal view needs SYSTEM SEQUENCE BY", b.Name)
	}
	d := newData(b, loc, hint, History)
	d.EventsCTE = "deduped"
	d.partition(true)
	d.bitemporal(b)
	return executeView("bitemporal.sql.tmpl", d, b)
}

func executeView(name string, d *data, b *flow.Bound) (string, error) {
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, name, d); err != nil {
		return "", fmt.Errorf("rendering view of flow %s: %w", b.Name, err)
	}
	return buf.String(), nil
}

// seqCol is one SEQUENCE BY column and the internal names derived from it.
type seqCol struct {
	Name, Field, Start, Next string
}

// BucketOf is the hash bucket of a row's key in a state of buckets: the
// key columns (qualified by alias, "" for none) as the state's __key text,
// FarmHash fingerprint modulo the buckets. The statistics, the fold,
// maintenance and a migration compute it alike, from the same columns.
func BucketOf(b *flow.Bound, alias string) string {
	keys := make([]string, len(b.Keys))
	for i, k := range b.Keys {
		keys[i] = q(k.Name)
		if alias != "" {
			keys[i] = alias + "." + keys[i]
		}
	}
	return fmt.Sprintf("ABS(MOD(FARM_FINGERPRINT(TO_JSON_STRING(STRUCT(%s))), %d))", strings.Join(keys, ", "), b.StateBuckets)
}

// valueCol is an output column that is not a key.
type valueCol struct {
	Name       string // quoted
	IgnoreNull bool
	Counter    string // IGNORE NULL UPDATES run counter
	Raw        string // the bitemporal view's raw value beside the filled one
}

type data struct {
	Summary, File    string
	Changelog, State string
	Hint             string
	Events           []string // quoted columns every event row carries
	// TruncateRow is Events as the state keeps a truncate: its keys NULL.
	// A truncate empties every key, whatever key its row carries, so the
	// state files it under none: with the markers, in the blocks of NULL
	// keys, which a filter on the first clustering column selects (the
	// change feed's statement and a view looked up by key read them).
	TruncateRow []string
	// TruncatesApart: the view reads the latest truncate from the tail and
	// the state's NULL-key blocks, apart from the events, so a filter on
	// the keys still prunes the state (SCD 1 views with APPLY AS TRUNCATE).
	TruncatesApart bool
	// BucketHash, for a state of buckets (flow.StateBucketsProperty), is
	// the bucket of an event row's key; Bucket is the state's bucket of a
	// row with an op (NULL on truncates: they carry no key). "" for a state
	// without buckets.
	BucketHash, Bucket string
	// RangeOf, for a state partitioned by key range
	// (flow.StateKeyRangeProperty), is the range of an event row's key
	// (keys outside the range in the first or the last); "" for another.
	RangeOf string
	// A state of versions' sparse rows (sparse.go): the columns that
	// maintenance writes sparse and those every read rebuilds, ", `__base`"
	// for the reads of the state, a row's identity, the event columns
	// rebuilt from a sparse row and its base, and as maintenance writes
	// them. Empty for other targets.
	Sparse, Rebuild  []sparseCol
	StoredBase       string
	Identity         string
	Rebuilt, Sparsed []string

	// HorizonDays, of an SCD 2 or bitemporal flow with a lateness horizon
	// (flow.LatenessHorizonProperty), is its days: maintenance drops the
	// events older than that which no view needs ("version_groups"). 0:
	// none. ShownJSON (bitemporal flows with a horizon only: shownJSON) is
	// what the view shows of an event: an event equal in it to the one
	// before it, learnt no later, is unseen.
	HorizonDays int
	ShownJSON   string

	Keys                  []string
	KeysQualified         []string
	Sequence              []seqCol
	Carry                 []string // event columns that are neither keys nor values
	Values                []valueCol
	IgnoreNullCols        []valueCol
	Output                []string
	Tracked               []string // SQL predicates: "column unchanged since the previous event"
	Where, OpExpr         string
	HasTruncate           bool
	IgnoreNull            bool
	Position              []string // for the truncate STRUCT
	PositionAsc           []string
	PositionDesc          []string
	PositionDescQualified []string
	AfterTruncate         string
	StartAt, EndAt        string
	NonEmpty              string

	// The fold's grouping: the keys, or (time travel) __asof and the keys,
	// so one fold computes the target as of many positions at once.
	Part, PartQualified []string
	AsOf                bool   // fold per __asof and end in a snapshots CTE
	OutputPrefix        string // "__asof,\n  " when AsOf
	TruncateJoin        string // how ranked rows meet the latest truncate

	Shape       Shape    // the kind's templates (see Shape)
	Interval    []string // the quoted interval columns of a target of versions, none otherwise
	RowID       string   // a target row's identity beside its key, as the change feed keeps it (ColChangeID)
	EventFilter string   // the changelog rows that are events of the flow
	HistoryCTE  string   // the name of the time-travel forms' deduplicated events
	// HistoryBound: the time-travel forms read the changelog after Hint
	// only (a target of versions, whose state keeps every event).
	HistoryBound bool
	Func         string // a table function's quoted name
	View         string // the flow's quoted view

	SystemSequence string // the quoted SYSTEM SEQUENCE BY column, "" if none
	// The bitemporal view's quoted sequence column and its type, and the
	// system time's type as the view keys it.
	SeqCol, SeqType, SysKeyType string
	// KeyedNulls are the target's columns as the bitemporal view's marker
	// rows carry them: the keys as they are, the others typed NULLs, named.
	// AndKeys (", `k1`, `k2`") follows __key in every PARTITION BY and
	// GROUP BY of that view, and NonKeyOutput are the output columns that
	// are not keys: the keys, carried as they are down to the state's scan,
	// let a query of one key prune the state's blocks (__key alone, a JSON
	// string of them, would hide them from the optimizer).
	KeyedNulls, NonKeyOutput []string
	AndKeys                  string
	// A system time as the bitemporal view keys it (SystemKey, SystemKeyE
	// for event e) and shows it again (SystemOut, a format of one operand).
	SystemKey, SystemKeyE, SystemOut string
	EventsCTE                        string // the name of the view's deduplicated events
	BusinessType, SystemType         string // the as-of function's argument types
	DDL                              bool   // render CREATE TABLE FUNCTION, else the body as a query
	Args                             args   // the function's arguments as the body reads them

	// Snapshot flows (snapshot.go).
	FoldCTE                string   // wrap the fold's final SELECT in a CTE of this name
	SnapTable              string   // the quoted snapshot table
	VersionCol, VersionKey string   // the quoted version column, and it as a version key
	VersionKeyType         string   // INT64 or STRING
	Bound                  string   // a constant lower bound of the version column, "" for none
	UpTo                   string   // compaction of a snapshot flow: the greatest version key it applies, a literal; "" for no bound
	KeysGone               []string // the keys as the gone CTE selects them
	GoneOutput, NullOutput []string // the output columns of a delete event, of a marker
	ClosedStart, ClosedEnd string   // a closed version's interval as the view shows it

	Compaction bool   // render the compaction form of the shared CTEs
	Merge      bool   // compaction's maintenance: fold the state's levels, not the changelog
	KeyRange   string // the quoted first key column, when runs filter the state by it ("" otherwise)
	RangeCount int    // at most this many ranges of it
	KeyFilter  string // the run's filter on the state's keys ("" for none)
	// A state with an archive (archive.go): its first generation that is
	// not one, as a literal; the change feed reads the levels only
	// (Archived), and the archive of the keys LateFilter selects ("" for
	// none); the columns of the fold's positions (Late).
	ArchiveEnd string
	// An SCD 1 state with a history (history.go): reads but _at's take
	// the generations from ArchiveEnd on; the fold copies its events into
	// the generation HistoryGenOf says (an expression of their ingestion
	// time), the history marker's is HistoryGen (a literal); _at reads the
	// generations before ArchiveEnd, HistoryGuard: failing while the
	// history marker is missing.
	History             bool
	HistoryGen          string
	HistoryGenOf        string
	HistoryGuard        bool
	ArchiveMarkerValues []string // the event columns of an archive marker row
	ArchiveSpec         string   // the fingerprint of the split (archiveSpec), a literal
	Archived            bool
	LateFilter          string
	PositionCols        string
	Changes             string // the quoted change table ("" when the flow has no change feed)
	// NullChangeOutput: the target's columns (and interval) of a change
	// table marker row.
	NullChangeOutput []string
	P                params   // the run's timestamps, as SQL literals
	MarkerValues     []string // the event columns of a watermark marker row
	SequenceNull     string   // "some sequence column is NULL"
}

const foldedMaxMarker = "\x00folded_max" // replaced by the run's literal

// markerValues is a copy of a marker row's event columns (MarkerValues)
// with the ingestion time's placeholder replaced by the literal at.
func markerValues(values []string, at string) []string {
	out := slices.Clone(values)
	for i, v := range out {
		if v == foldedMaxMarker {
			out[i] = at
		}
	}
	return out
}

const msgPos = "IFNULL(`" + catalog.ColMessageID + "`, '')"

// deleteRank orders a delete after an upsert at the same position.
const deleteRank = "IF(__op = 'D', 1, 0)"

func q(name string) string { return catalog.QuoteIdent(name) }

// shownJSON is an event's values a view shows (its non-key output
// columns) as one JSON string, "”" when it shows none: what a bitemporal
// flow's horizon compares an event by with the one before it.
func shownJSON(values []valueCol) string {
	if len(values) == 0 {
		return "''"
	}
	shown := make([]string, len(values))
	for i, v := range values {
		shown[i] = v.Name
	}
	return "TO_JSON_STRING(STRUCT(" + strings.Join(shown, ", ") + "))"
}

func newData(b *flow.Bound, loc catalog.Location, hint time.Time, s Shape) *data {
	d := &data{
		Summary:     b.String(),
		File:        b.Pos.File,
		Changelog:   loc.ChangelogTable(b.Flow),
		State:       loc.StateTable(b.Flow),
		Hint:        Literal(hint),
		Where:       b.Where,
		HasTruncate: b.Truncate != "",
		IgnoreNull:  len(b.IgnoreNull) > 0,
		OpExpr:      opExpr(b),
		Shape:       s,
		RowID:       "''",
		EventsCTE:   "events",
		View:        loc.ViewTable(b.Flow),
	}
	if b.SystemSequence != nil {
		d.SystemSequence = q(b.SystemSequence.Name)
		d.SystemKey, d.SystemKeyE, d.SystemOut = d.SystemSequence, "e."+d.SystemSequence, "%s"
		if b.SystemSequence.Type == schema.Timestamp {
			// Keyed as microseconds: the BigQuery emulator joins and
			// partitions TIMESTAMPs with fractional seconds wrongly.
			d.SystemKey, d.SystemKeyE = "UNIX_MICROS("+d.SystemKey+")", "UNIX_MICROS("+d.SystemKeyE+")"
			d.SystemOut = "TIMESTAMP_MICROS(%s)"
		}
	}
	if s.Versions {
		d.Interval = []string{q(catalog.StartAt), q(catalog.EndAt)}
		d.RowID = "TO_JSON_STRING(" + q(catalog.StartAt) + ")"
	}
	events := catalog.EventColumns(b)
	d.columns(b, events)
	if b.StateBuckets > 0 {
		d.BucketHash = BucketOf(b, "")
		d.Bucket = fmt.Sprintf("IF(%s = 'T', NULL, %s)", q(catalog.ColStateOp), d.BucketHash)
	}
	if b.StateKeyRange != nil {
		d.RangeOf = RangeOf(b, "")
	}
	d.sequence(b)
	if s.Versions {
		d.sparse(b, events)
		d.HorizonDays = b.LatenessHorizonDays
		if d.HorizonDays > 0 && b.SystemSequence != nil {
			d.ShownJSON = shownJSON(d.Values)
		}
	}
	if HistoryKept(b) {
		d.History, d.HistoryGen, d.HistoryGenOf, d.ArchiveEnd = true, Literal(HistoryGen), historyGenOf(q(catalog.ColIngestedAt)), Literal(ArchiveEnd)
	}
	d.partition(false)
	d.EventFilter = eventFilter(b, d)
	for _, c := range events {
		switch {
		case c.Name == catalog.ColIngestedAt:
			d.MarkerValues = append(d.MarkerValues, foldedMaxMarker)
		case c.Repeated:
			d.MarkerValues = append(d.MarkerValues, "CAST([] AS "+c.SQLType()+")")
		default:
			d.MarkerValues = append(d.MarkerValues, "CAST(NULL AS "+c.SQLType()+")")
		}
	}
	return d
}

// columns fills the event, key, output, value and carried columns.
func (d *data) columns(b *flow.Bound, events schema.Columns) {
	for _, c := range events {
		d.Events = append(d.Events, q(c.Name))
		if isIn(b.Keys, c.Name) {
			d.TruncateRow = append(d.TruncateRow, "CAST(NULL AS "+c.SQLType()+")")
		} else {
			d.TruncateRow = append(d.TruncateRow, q(c.Name))
		}
	}
	for _, k := range b.Keys {
		d.Keys = append(d.Keys, q(k.Name))
		d.KeysQualified = append(d.KeysQualified, "e."+q(k.Name))
	}
	values := map[string]bool{}
	for i, c := range b.Output {
		d.Output = append(d.Output, q(c.Name))
		if isIn(b.Keys, c.Name) {
			continue
		}
		v := valueCol{Name: q(c.Name), IgnoreNull: b.IsIgnoreNull(c.Name), Counter: fmt.Sprintf("__n%d", i), Raw: fmt.Sprintf("__raw%d", i)}
		values[c.Name] = true
		d.Values = append(d.Values, v)
		if v.IgnoreNull {
			d.IgnoreNullCols = append(d.IgnoreNullCols, v)
		}
		if b.IsTracked(c.Name) {
			d.Tracked = append(d.Tracked, unchanged(c))
		}
	}
	for _, c := range events {
		if !isIn(b.Keys, c.Name) && !values[c.Name] {
			d.Carry = append(d.Carry, q(c.Name))
		}
	}
}

// partition sets the fold's grouping: per key, or per (__asof, key) when
// asOf (the time-travel forms fold many positions in one query).
func (d *data) partition(asOf bool) {
	d.AsOf = asOf
	d.Part, d.PartQualified, d.OutputPrefix = d.Keys, d.KeysQualified, ""
	d.TruncateJoin = "CROSS JOIN last_truncate AS lt"
	if asOf {
		d.Part = append([]string{"__asof"}, d.Keys...)
		d.PartQualified = append([]string{"e.__asof"}, d.KeysQualified...)
		d.OutputPrefix = "__asof,\n  "
		// Positions without a truncate have no last_truncate row.
		d.TruncateJoin = "LEFT JOIN last_truncate AS lt ON lt.__asof = e.__asof"
	}
}

// bitemporal fills what the bitemporal view's one-pass path (keys whose
// events come in order by sequence and by system time) and its cuts (the
// others, folded per system time from a cut on) need. Its SEQUENCE BY is
// one column (the parser refuses a STRUCT: business time is one sortable
// value), which the cuts compare. (With IGNORE NULL UPDATES the filling
// reaches back past a cut: the events before a system time's first
// unknown one take the values filled over all events, which they hold
// then.)
func (d *data) bitemporal(b *flow.Bound) {
	// The fold partitions by the system time's ordinal and the key's last
	// one (constant per key), which it passes on.
	d.Part = append([]string{"__asof", "__last_n"}, d.Keys...)
	d.PartQualified = append([]string{"e.__asof", "e.__last_n"}, d.KeysQualified...)
	d.OutputPrefix = "__asof,\n  __last_n,\n  "
	d.KeyedNulls, d.NonKeyOutput = d.KeyedNulls[:0], d.NonKeyOutput[:0]
	for _, c := range b.Output {
		if _, key := b.Keys.Lookup(c.Name); key {
			d.KeyedNulls = append(d.KeyedNulls, q(c.Name))
			continue
		}
		d.KeyedNulls = append(d.KeyedNulls, nullOf(c)+" AS "+q(c.Name))
		d.NonKeyOutput = append(d.NonKeyOutput, q(c.Name))
	}
	d.AndKeys = ", " + strings.Join(d.Keys, ", ")
	d.SeqCol = q(b.Sequence[0].Name)
	d.SeqType = b.Sequence[0].SQLType()
	d.SysKeyType = schema.Int64
	if b.SystemSequence.Type != schema.Timestamp {
		d.SysKeyType = b.SystemSequence.SQLType()
	}
}

// changeOutput fills what the change table needs: its name and the NULLs of
// a marker row (the target's columns, and an SCD 2 target's interval).
func (d *data) changeOutput(b *flow.Bound, loc catalog.Location) {
	d.Changes = loc.ChangesTable(b.Flow)
	d.NullChangeOutput = d.NullChangeOutput[:0]
	for _, c := range b.Output {
		d.NullChangeOutput = append(d.NullChangeOutput, nullOf(c))
	}
	if d.Shape.Versions {
		t := catalog.IntervalType(b)
		d.NullChangeOutput = append(d.NullChangeOutput, "CAST(NULL AS "+t+")", "CAST(NULL AS "+t+")")
	}
}

// sequence fills what is derived from the SEQUENCE BY columns: event
// positions (the message id breaks ties), the SCD 2 interval bounds, and
// the NULL-sequence test.
func (d *data) sequence(b *flow.Bound) {
	var nonEmpty, starts, ends, nulls []string
	for i, s := range b.Sequence {
		sc := seqCol{Name: q(s.Name), Field: q(s.Name), Start: fmt.Sprintf("__start%d", i), Next: fmt.Sprintf("__next%d", i)}
		d.Sequence = append(d.Sequence, sc)
		d.Position = append(d.Position, fmt.Sprintf("%s AS __p%d", sc.Name, i))
		d.PositionAsc = append(d.PositionAsc, sc.Name)
		d.PositionDesc = append(d.PositionDesc, sc.Name+" DESC")
		d.PositionDescQualified = append(d.PositionDescQualified, "e."+sc.Name+" DESC")
		nonEmpty = append(nonEmpty, fmt.Sprintf("%s = %s", sc.Next, sc.Start))
		starts = append(starts, fmt.Sprintf("%s AS %s", sc.Start, sc.Field))
		ends = append(ends, fmt.Sprintf("%s AS %s", sc.Next, sc.Field))
		nulls = append(nulls, sc.Name+" IS NULL")
	}
	// Ties at one sequence: a bitemporal flow's later system time is a
	// correction, so it comes later; then a delete comes after an upsert
	// (it wins, as in Spark's AUTO CDC); then the message id decides, so
	// the outcome never depends on arrival order.
	if b.SystemSequence != nil {
		d.PositionAsc = append(d.PositionAsc, d.SystemKey)
		d.PositionDesc = append(d.PositionDesc, d.SystemKey+" DESC")
		d.PositionDescQualified = append(d.PositionDescQualified, d.SystemKeyE+" DESC")
	}
	d.PositionAsc = append(d.PositionAsc, deleteRank)
	d.PositionDesc = append(d.PositionDesc, deleteRank+" DESC")
	d.PositionDescQualified = append(d.PositionDescQualified, "IF(e.__op = 'D', 1, 0) DESC")
	d.Position = append(d.Position, msgPos+" AS __pm")
	d.PositionAsc = append(d.PositionAsc, msgPos)
	d.PositionDesc = append(d.PositionDesc, msgPos+" DESC")
	d.PositionDescQualified = append(d.PositionDescQualified, "IFNULL(e.`"+catalog.ColMessageID+"`, '') DESC")
	d.AfterTruncate = after(b.Sequence)
	d.NonEmpty = fmt.Sprintf("%s IS NULL OR NOT (%s)", d.Sequence[0].Next, strings.Join(nonEmpty, " AND "))
	if b.SequenceStruct {
		d.StartAt = "STRUCT(" + strings.Join(starts, ", ") + ")"
		d.EndAt = fmt.Sprintf("IF(%s IS NULL, NULL, STRUCT(%s))", d.Sequence[0].Next, strings.Join(ends, ", "))
	} else {
		d.StartAt, d.EndAt = d.Sequence[0].Start, d.Sequence[0].Next
	}
	if b.SystemSequence != nil {
		nulls = append(nulls, q(b.SystemSequence.Name)+" IS NULL")
	}
	d.SequenceNull = strings.Join(nulls, " OR ")
}

// Run holds the timestamps of one compaction run. They are rendered into the
// SQL as TIMESTAMP literals (constants, so BigQuery prunes partitions with
// them) rather than sent as query parameters: the BigQuery emulator bound
// a TIMESTAMP parameter of the fold as a DATE (midnight) in some statements.
type Run struct {
	Watermark       time.Time // the previous watermark: rows after it are read
	FoldedMax       time.Time // the newest _cdc_ingested_at folded so far
	Generation      time.Time // the generation this run writes
	NewWatermark    time.Time // the watermark this run commits: rows up to it are folded
	TombstoneCutoff time.Time // maintenance of SCD 1: tombstones ingested before it are dropped
	// Cutoff: maintenance deletes the levels written before it (they were
	// committed before the maintenance read the state).
	Cutoff time.Time
	// ChangesFrom: the change feed is materialized up to it; the run
	// materializes the positions in (ChangesFrom, ChangesTo] (ChangesTo at
	// most NewWatermark; a zero ChangesTo is NewWatermark).
	ChangesFrom, ChangesTo time.Time
	// Keys selects the state rows the change feed's run reads: the keys with
	// new events; nil reads every key.
	Keys *KeyFilter
	// Slice is the width of the slices of positions a change feed is
	// materialized in (compact.Options.ChangeSlice), aligned to multiples
	// of it since the Unix epoch: an SCD 1 fold keeps each key's deciding
	// events per slice, so the feed finds every slice's baseline in the
	// state. 0: one slice (a flow without a change feed, or no slices).
	Slice time.Duration
	// Chunk, for a state of buckets, limits the fold, maintenance and its
	// DELETE to a range of buckets (nil: every bucket, one statement).
	Chunk *BucketChunk
	// Archive: maintenance (and its DELETE) of a state with an archive
	// (Archives) writes each key's closed versions into this archive day
	// (ArchiveSlot); zero: no archive.
	Archive time.Time
	// Archived: the change feed reads the state's levels, and the archive
	// of its Late keys only (nil: every generation).
	Archived *ArchiveRead
}

// BucketChunk is a range [Lo, Hi] of the buckets of a state of buckets
// that one statement writes: BigQuery lets one job modify at most 4,000
// partitions, so a run touching more buckets, or maintenance of more,
// splits its fold, maintenance and DELETE into statements by ranges. Only
// the Last one writes the run's marker (the run's commit point: a crash
// before it leaves levels without a marker, whose rows the next run folds
// again and every reader counts once), and deletes the NULL partition's
// folded rows; every one reads and writes the truncates, which carry no
// key.
type BucketChunk struct {
	Lo, Hi int64
	Last   bool
}

type params struct {
	Watermark, FoldedMax, Generation, NewWatermark, TombstoneCutoff, Cutoff, ChangesFrom, ChangesTo string
	// Slice and SliceE: the slice of a row's position (SliceE of the
	// fold's events aliased e); "" for one slice.
	Slice, SliceE string
	// A bucket chunk's filters (Run.Chunk; "" for none): of the changelog's
	// events, of the state's levels, and of maintenance's DELETE;
	// MoreChunks: a later statement writes the marker.
	ChunkEvents, ChunkState, ChunkGC string
	MoreChunks                       bool
	// Archive and ArchiveNext: the archive day maintenance writes, and the
	// day after it ("" for none); ArchiveGen and ArchiveBucket: an
	// archived row's generation and (a state of buckets) bucket.
	Archive, ArchiveNext, ArchiveGen, ArchiveBucket string
	// FromStart: the run folds from the epoch (a state's first fold): its
	// copies are the whole history, and it writes the history marker.
	FromStart bool
}

// Literal renders a timestamp as a BigQuery TIMESTAMP literal.
func Literal(t time.Time) string {
	return "TIMESTAMP '" + t.UTC().Format("2006-01-02 15:04:05.999999-07:00") + "'"
}

// Compaction renders the statements of a flow's compaction runs. It is
// built once per flow and bound schema; each statement is rendered for the
// run at hand, from the same template data.
type Compaction struct {
	b *flow.Bound
	d data
}

// NewCompaction prepares the compaction statements of a change-stream
// flow whose target has shape s.
func NewCompaction(b *flow.Bound, loc catalog.Location, s Shape) *Compaction {
	d := newData(b, loc, Epoch, s)
	d.Compaction = true
	if keyFilterable(b) {
		d.KeyRange = d.Keys[0]
	}
	d.RangeCount = KeyRanges
	if b.ChangeFeed() {
		d.changeOutput(b, loc)
	}
	return &Compaction{b: b, d: *d}
}

// KeyRanges bounds the ranges of the first key column a run's statistics
// return (see KeyFilter): each is one value while a run touches no more
// keys, so up to KeyRanges touched keys the change feed reads the blocks
// of those keys only (256 ranges, before, covered whole spans of keys
// from 257 touched keys on). The filter's text is bounded apart
// (MaxKeyFilterBytes).
const KeyRanges = 4096

// render runs one template with the run's timestamps as literals.
func (c *Compaction) render(name string, r Run) (string, error) {
	return c.renderWith(name, r, c.d)
}

func (c *Compaction) renderWith(name string, r Run, d data) (string, error) {
	d.P = params{Watermark: Literal(r.Watermark), FoldedMax: Literal(r.FoldedMax), Generation: Literal(r.Generation),
		NewWatermark: Literal(r.NewWatermark), TombstoneCutoff: Literal(r.TombstoneCutoff), Cutoff: Literal(r.Cutoff),
		ChangesFrom: Literal(r.ChangesFrom), ChangesTo: Literal(r.NewWatermark), FromStart: !r.Watermark.After(Epoch)}
	if !r.ChangesTo.IsZero() {
		d.P.ChangesTo = Literal(r.ChangesTo)
	}
	if r.Slice > 0 && !d.Merge {
		at := q(catalog.ColIngestedAt)
		w := strconv.FormatInt(r.Slice.Microseconds(), 10)
		d.P.Slice = "DIV(UNIX_MICROS(" + at + ") - 1, " + w + ")"
		d.P.SliceE = "DIV(UNIX_MICROS(e." + at + ") - 1, " + w + ")"
	}
	if ch := r.Chunk; ch != nil && c.b.StateKeyRange != nil {
		d.P.ChunkEvents, d.P.ChunkState, d.P.ChunkGC = rangeChunk(c.b, ch, d.OpExpr)
		d.P.MoreChunks = !ch.Last
	}
	if ch := r.Chunk; ch != nil && c.b.StateBuckets > 0 {
		col := q(catalog.ColStateBucket)
		d.P.ChunkEvents = fmt.Sprintf("(%s BETWEEN %d AND %d OR %s = 'T')", BucketOf(c.b, ""), ch.Lo, ch.Hi, d.OpExpr)
		in := fmt.Sprintf("%s BETWEEN %d AND %d", col, ch.Lo, ch.Hi)
		if n := int64(c.b.StateBuckets); StatePartitions(c.b) > c.b.StateBuckets {
			// The buckets' archive partitions too (archive.go).
			in = fmt.Sprintf("(%s OR %s BETWEEN %d AND %d)", in, col, ch.Lo+n, ch.Hi+n)
		}
		d.P.ChunkState = fmt.Sprintf("(%s OR %s IS NULL)", in, col)
		d.P.ChunkGC = in
		if ch.Last {
			d.P.ChunkGC = d.P.ChunkState
		}
		d.P.MoreChunks = !ch.Last
	}
	d.MarkerValues = markerValues(c.d.MarkerValues, d.P.FoldedMax)
	if err := c.archiveParams(&d, r); err != nil {
		return "", err
	}
	if name == "compact_changes" || name == "late_keys" {
		keys := r.Keys
		if name == "compact_changes" && r.Archived == nil {
			keys = withArchive(c.b, keys) // every generation: the archive's partitions too
		}
		f, err := keys.sql(c.b)
		if err != nil {
			return "", err
		}
		d.KeyFilter = f
	}
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, name, &d); err != nil {
		return "", fmt.Errorf("rendering %s of flow %s: %w", name, c.b.Name, err)
	}
	return buf.String(), nil
}

// FirstPosition reads the oldest ingestion time of the flow's events, in
// the changelog and the state (NULL when there is none): where a change
// feed's first materialization starts its first slice. It reads
// _cdc_ingested_at of both tables whole, once per flow.
func (c *Compaction) FirstPosition() (string, error) { return c.render("first_position", Run{}) }

// Marker reads the newest watermark marker and generation of the state (a
// run without labels starts from it).
func (c *Compaction) Marker() (string, error) { return c.render("marker_now", Run{}) }

// Stats reads what a run from r.Watermark would fold (r.Watermark and
// r.FoldedMax are used): counts, the keys it touches (as ranges of the
// first key column) and how far the change feed is materialized. It reads
// the changelog rows after the watermark only, and the change table's
// markers.
func (c *Compaction) Stats(r Run) (string, error) { return c.render("stats", r) }

// Fold is the INSERT of the run's level and its marker: the run's commit
// point. It reads the changelog rows in (r.Watermark, r.NewWatermark]
// only.
func (c *Compaction) Fold(r Run) (string, error) { return c.render(c.d.Shape.Compact, r) }

// Changes is the INSERT of the change feed's rows of the positions in
// (r.ChangesFrom, r.ChangesTo] and its marker. It reads the changelog
// rows in that range and the state rows of the keys r.Keys selects.
func (c *Compaction) Changes(r Run) (string, error) {
	if c.d.Changes == "" {
		return "", fmt.Errorf("flow %s has no change feed", c.b.Name)
	}
	// The fold runs per (position, key): the target as of many positions.
	d := c.d
	d.partition(true)
	d.HistoryCTE = "deduped"
	return c.renderWith("compact_changes", r, d)
}

// Maintain folds every level of the state ingested at or before
// r.Watermark into one (generation r.Generation), dropping SCD 1
// tombstones ingested before r.TombstoneCutoff. It reads the whole state: runs do it at most
// once a day (compact.Options.MaintainEvery).
func (c *Compaction) Maintain(r Run) (string, error) {
	d := c.d
	d.Merge = true
	return c.renderWith(c.d.Shape.Compact, r, d)
}

// MaintainGC deletes what Maintain folded: the levels written before
// r.Cutoff (ingested at or before r.Watermark), and the markers of the
// state and the change table written before it but the newest.
func (c *Compaction) MaintainGC(r Run) (string, error) {
	return c.render("merge_gc", r)
}

// ExpireChangelog deletes the rows of the flow's changelog ingested before
// cutoff (a day boundary, so BigQuery drops whole partitions).
func (c *Compaction) ExpireChangelog(cutoff time.Time) (string, error) {
	return c.render("expire_changelog", Run{Watermark: cutoff})
}

func isIn(cols schema.Columns, name string) bool {
	_, ok := cols.Lookup(name)
	return ok
}

// unchanged is the predicate "column c has the value it had at the previous
// event" (window w). Types without = are compared as JSON text.
func unchanged(c schema.Column) string {
	if c.Equatable() {
		return fmt.Sprintf("LAG(%s) OVER w IS NOT DISTINCT FROM %s", q(c.Name), q(c.Name))
	}
	return fmt.Sprintf("TO_JSON_STRING(LAG(%s) OVER w) = TO_JSON_STRING(%s)", q(c.Name), q(c.Name))
}

// after renders "event e is positioned after the truncate lt.__t": a
// lexicographic comparison of (sequence..., message id), since STRUCTs
// cannot be compared with > in BigQuery.
func after(seq schema.Columns) string {
	type pair struct{ e, t string }
	var parts []pair
	for i, s := range seq {
		parts = append(parts, pair{"e." + q(s.Name), fmt.Sprintf("lt.__t.__p%d", i)})
	}
	parts = append(parts, pair{"IFNULL(e.`" + catalog.ColMessageID + "`, '')", "lt.__t.__pm"})
	expr := fmt.Sprintf("%s > %s", parts[len(parts)-1].e, parts[len(parts)-1].t)
	for i := len(parts) - 2; i >= 0; i-- {
		expr = fmt.Sprintf("%s > %s OR (%s = %s AND (%s))", parts[i].e, parts[i].t, parts[i].e, parts[i].t, expr)
	}
	return "(" + expr + ")"
}

func opExpr(b *flow.Bound) string {
	var whens []string
	if b.Truncate != "" {
		whens = append(whens, fmt.Sprintf("WHEN (%s) THEN 'T'", b.Truncate))
	}
	if b.Delete != "" {
		whens = append(whens, fmt.Sprintf("WHEN (%s) THEN 'D'", b.Delete))
	}
	if len(whens) == 0 {
		return "'U'"
	}
	return "CASE " + strings.Join(whens, " ") + " ELSE 'U' END"
}

// eventFilter is the condition a changelog row meets to be an event of the
// flow: a sequence (NULL sequences never reach a view) and the flow's WHERE.
func eventFilter(b *flow.Bound, d *data) string {
	var where []string
	for _, s := range d.Sequence {
		where = append(where, s.Name+" IS NOT NULL")
	}
	if d.SystemSequence != "" {
		where = append(where, d.SystemSequence+" IS NOT NULL")
	}
	if b.Where != "" {
		where = append(where, "("+b.Where+")")
	}
	return strings.Join(where, " AND ")
}

// args are a table function's arguments as its body reads them: the
// parameter names in the DDL, SQL literals in the query form. The body reads
// them once, in its args CTE, where no changelog column can shadow them.
type args struct{ TS, From, To, Business, System string }

var functionParams = args{TS: "ts", From: "from_position", To: "to_position", Business: "business_time", System: "system_time"}

// AtFunction renders the DDL of the flow's point-in-time table function
// <target>_at(ts): the target as the view showed it at ts (by ingestion
// time). A target of versions keeps every event in its state, and an SCD 1
// target's state a history of them (history.go), so it reads the changelog
// only after hint, a committed watermark, as its view does (AtBounded:
// compaction renders it again with a newer bound now and then); an SCD 1
// target without a history (a state of buckets) reads the whole
// changelog (its state keeps only the events that decide it now).
func AtFunction(b *flow.Bound, loc catalog.Location, s Shape, hint time.Time) (string, error) {
	return at(b, loc, s, hint, true, functionParams)
}

// AtBounded reports whether <target>_at of flow b, a target of shape s,
// reads the changelog after a pruning bound (AtFunction's hint): its state
// keeps every event (a target of versions), or a history of them
// (HistoryKept).
func AtBounded(b *flow.Bound, s Shape) bool { return s.Versions || HistoryKept(b) }

// AtQuery is the body of <target>_at(ts) as a query, ts bound as a
// literal, with pruning bound hint (see AtFunction). The emulator creates
// the function but its analyzer crashes on calls of bodies this size, so
// tests run this (the same SQL).
func AtQuery(b *flow.Bound, loc catalog.Location, s Shape, ts, hint time.Time) (string, error) {
	return at(b, loc, s, hint, false, args{TS: Literal(ts)})
}

func at(b *flow.Bound, loc catalog.Location, s Shape, hint time.Time, ddl bool, a args) (string, error) {
	if !AtBounded(b, s) {
		hint = Epoch
	}
	d := newData(b, loc, hint, s)
	d.HistoryBound = AtBounded(b, s)
	d.HistoryGuard = d.History && hint.After(Epoch)
	d.HistoryCTE, d.DDL, d.Args = "events", ddl, a
	d.Func = loc.Routine(b.Flow, catalog.AtFunctionName(b.Flow))
	return execute("at", d, b)
}

// ChangesFunction renders the DDL of the flow's change feed
// <target>_changes(from_position, to_position).
func ChangesFunction(b *flow.Bound, loc catalog.Location, s Shape) (string, error) {
	return changes(b, loc, s, true, functionParams)
}

// ChangesQuery is the body of <target>_changes(from, to) as a query, the
// positions bound as literals (a zero time as NULL); see AtQuery.
func ChangesQuery(b *flow.Bound, loc catalog.Location, s Shape, from, to time.Time) (string, error) {
	return changes(b, loc, s, false, args{From: nullableLiteral(from), To: nullableLiteral(to)})
}

// nullableLiteral is t as a TIMESTAMP literal, a zero t as NULL.
func nullableLiteral(t time.Time) string {
	if t.IsZero() {
		return "CAST(NULL AS TIMESTAMP)"
	}
	return Literal(t)
}

func changes(b *flow.Bound, loc catalog.Location, s Shape, ddl bool, a args) (string, error) {
	if !b.ChangeFeed() {
		return "", fmt.Errorf("flow %s has no change feed", b.Name)
	}
	d := newData(b, loc, Epoch, s)
	d.DDL, d.Args = ddl, a
	d.changeOutput(b, loc)
	d.Func = loc.Routine(b.Flow, catalog.ChangesFunctionName(b.Flow))
	return execute("changes", d, b)
}

// AsOfFunction renders the DDL of a bitemporal flow's table function
// <target>_as_of(business_time, system_time): the rows valid at business
// time as known at system time, read from the view (so compaction keeps it
// exact as it keeps the view).
func AsOfFunction(b *flow.Bound, loc catalog.Location) (string, error) {
	return asOf(b, loc, true, functionParams)
}

// AsOfQuery is the body of <target>_as_of as a query, the arguments given
// as SQL literals; see AtQuery.
func AsOfQuery(b *flow.Bound, loc catalog.Location, business, system string) (string, error) {
	return asOf(b, loc, false, args{Business: business, System: system})
}

func asOf(b *flow.Bound, loc catalog.Location, ddl bool, a args) (string, error) {
	if b.SystemSequence == nil {
		return "", fmt.Errorf("flow %s has no SYSTEM SEQUENCE BY: it has no as-of function", b.Name)
	}
	d := newData(b, loc, Epoch, History)
	d.DDL, d.Args = ddl, a
	d.Func = loc.Routine(b.Flow, catalog.AsOfFunctionName(b.Flow))
	d.BusinessType, d.SystemType = b.Sequence[0].SQLType(), b.SystemSequence.SQLType()
	return execute("as_of", d, b)
}

func execute(name string, d *data, b *flow.Bound) (string, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, d); err != nil {
		return "", fmt.Errorf("rendering %s of flow %s: %w", name, b.Name, err)
	}
	return uncommentBody(buf.String()), nil
}

var commentLine = regexp.MustCompile(`(?m)^[ \t]*--[^\n]*\n`)

// uncommentBody drops the comment lines of a table function's body (after
// CREATE), keeping those before it: the BigQuery emulator's analyzer
// crashes (a WASM trap) when a function whose body holds the fold's comment
// lines is called, and the comments before CREATE explain the function.
// BigQuery is indifferent; the templates keep their comments.
func uncommentBody(ddl string) string {
	i := strings.Index(ddl, "CREATE OR REPLACE TABLE FUNCTION")
	if i < 0 {
		return ddl // the query form keeps its comments
	}
	return ddl[:i] + commentLine.ReplaceAllString(ddl[i:], "")
}

// EventsQuery selects a flow's changelog events as the view sees them before
// folding: the flow's WHERE applied, NULL sequences dropped, and __op
// classified by its DELETE/TRUNCATE conditions. Tests feed its rows to the
// reference model; compaction reports use it to count.
func EventsQuery(b *flow.Bound, loc catalog.Location) string {
	d := newData(b, loc, Epoch, Current) // the events are the same whatever the target's shape
	return fmt.Sprintf("SELECT %s, %s AS __op FROM %s WHERE %s", strings.Join(d.Events, ", "), d.OpExpr, d.Changelog, d.EventFilter)
}

// AppendsSince reads the append ledger (catalog.AppendsTable): each
// source's furthest cover among the ledger rows reaching past since. The
// table is partitioned by day of until and clustered by it, so the
// constant filter bills the blocks of the rows since then (at least
// 10 MB), whatever the number of sources.
func AppendsSince(loc catalog.Location, since time.Time) string {
	return "-- bqcdc append ledger: the sources appended to after " + since.UTC().Format(time.RFC3339Nano) + "\n" +
		"SELECT " + catalog.QuoteIdent(catalog.ColAppendsSource) + " AS " + q(OutSource) + ", MAX(" + catalog.QuoteIdent(catalog.ColAppendsUntil) + ") AS " + q(OutUntil) + "\n" +
		"FROM " + catalog.QuoteIdent(loc.Project) + "." + catalog.QuoteIdent(loc.DefaultDataset) + "." + catalog.QuoteIdent(catalog.AppendsTable) + "\n" +
		"WHERE " + catalog.QuoteIdent(catalog.ColAppendsUntil) + " > " + Literal(since) + "\n" +
		"GROUP BY 1"
}
