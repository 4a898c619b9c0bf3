package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/progress"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// Target names where bqcdc's objects live.
type Target struct {
	Project string
	Dataset string // the default dataset: changelogs, dead letters, unqualified targets
	// DeadLetterRetentionDays expires _bqcdc_dead_letters partitions (by
	// day dead-lettered) this many days old; 0 keeps them (and removes an
	// expiration set before). Terraform's dead_letter_retention_days.
	DeadLetterRetentionDays int
}

// Changelogs returns the changelog columns of each source, by source key,
// as flow.BindAll takes them.
func Changelogs(sources map[string]SourceSchema) map[string]schema.Columns {
	changelogs := make(map[string]schema.Columns, len(sources))
	for src, s := range sources {
		changelogs[src] = s.Columns
	}
	return changelogs
}

// LookupSources resolves the changelog layout of every flow source,
// DefaultConcurrency sources at a time (with a registry each is a round
// trip, and 500 of them one after another take minutes). A source whose
// schema cannot be had (not found, unreadable, invalid, or sharing its
// changelog table with another source) refuses only the flows that read
// it, each at its FROM (a *flow.Error in refused): the others go on, with
// their sources in sources and themselves in ok.
func LookupSources(ctx context.Context, flows []*flow.Flow, schemas Schemas) (sources map[string]SourceSchema, ok []*flow.Flow, refused error) {
	return lookupSources(ctx, flows, schemas, DefaultConcurrency)
}

func lookupSources(ctx context.Context, flows []*flow.Flow, schemas Schemas, n int) (map[string]SourceSchema, []*flow.Flow, error) {
	srcs := flow.Sources(flows)
	failed := map[string]error{}
	tables := map[string]string{}
	for _, src := range srcs {
		name := catalog.TableName(src)
		if other, clash := tables[name]; clash {
			err := fmt.Errorf("sources %s and %s would share the changelog table %s: rename one topic", other, src, name)
			failed[src], failed[other] = err, err
			continue
		}
		tables[name] = src
	}
	found := make([]SourceSchema, len(srcs))
	errs := make([]error, len(srcs))
	_ = forEach(len(srcs), n, func(i int) error {
		if failed[srcs[i]] == nil {
			found[i], errs[i] = schemas.Lookup(ctx, srcs[i])
		}
		return nil // one source's failure is its flows' alone
	})
	out := make(map[string]SourceSchema, len(srcs))
	for i, src := range srcs {
		switch {
		case failed[src] != nil:
		case errs[i] != nil:
			failed[src] = errs[i]
		default:
			out[src] = found[i]
		}
	}
	var ok []*flow.Flow
	var refused []error
	for _, f := range flows {
		src, reads := f.ChangelogSource()
		if err := failed[src]; reads && err != nil {
			e := flow.Errorf(f.Source.Pos, "%v", err)
			e.Flow = f.Name
			refused = append(refused, flow.ErrorList{e})
			continue
		}
		ok = append(ok, f)
	}
	return out, ok, errors.Join(refused...)
}

// Options tune All.
type Options struct {
	// Concurrency bounds the objects applied (and schemas looked up) at
	// once; 0 means DefaultConcurrency.
	Concurrency int
	// Progress, if set, counts the objects applied; All sets its total.
	Progress *progress.Meter
	// ReadWatermarks reads each flow's watermark with a query to render its
	// view, instead of reusing the pruning bound the view carries (see
	// flowObjects): for after a state table was edited by hand.
	ReadWatermarks bool
	// Lister, if set, lists each dataset's tables with their labels before
	// anything is applied: an object labelled as applied with what is
	// wanted of it now (catalog.SpecLabel) is then not read, and one not
	// listed is created without a read. A second apply that changes
	// nothing costs a request per 1,000 objects instead of one per object.
	Lister Lister
	// Verify reads every object even with a Lister: for after objects were
	// edited by hand (the labels do not see such edits).
	Verify bool
	// SkipTableFunctions leaves out the flows' table functions (<target>_at,
	// _changes, _as_of). For the local emulator only (internal/emulator,
	// concession 11): it cannot call them, and creating them grows its SQL
	// analyzer's memory until a long-running process dies.
	SkipTableFunctions bool
	// AfterMoveStep, if set, is called after each step of moving a state to
	// another partitioning (relayout: MoveCopied, MoveDeleted, MoveCreated,
	// MoveFilled); an error stops the move there, as a crash would. Tests
	// check the views at each step.
	AfterMoveStep func(flowName, step string) error
	// Notices, if set, gets a line before apply does what costs or loses
	// something: a state about to be moved (its rows and bytes, and what
	// the move is billed), before the move starts; a state whose flow
	// gained a lateness horizon or a shorter one (what its next
	// maintenance will drop for good). The report has them too, at the end.
	Notices io.Writer
	// StatusWithGolds leaves the status view to Golds, which the caller
	// runs next: it makes the view with the materialized views' rows,
	// once their state tables exist (a view's query must name tables that
	// do). Without it AllWith makes the view and Golds leaves it alone.
	StatusWithGolds bool
}

// AllWith applies everything the flows need: the datasets, one changelog per
// source (clustered by the keys of its first flow), the dead-letter and
// compaction report tables, and each flow's state and view. A flow that
// does not bind is skipped: AllWith applies the others and then returns the
// bound flows with flow.BindAll's error. Objects are applied DefaultConcurrency at
// a time (opts.Concurrency sets another bound); rep lists them in a fixed order
// (datasets, changelogs by first use, the shared tables, then each flow's
// state and view in flow order).
func AllWith(ctx context.Context, bq *bigquery.Client, t Target, flows []*flow.Flow, schemas Schemas, opts Options, rep *Report) ([]*flow.Bound, error) {
	sources, flows, noSchema := lookupSources(ctx, flows, schemas, opts.Concurrency)
	if err := ctx.Err(); err != nil {
		return nil, err // not the sources' fault
	}
	if _, err := SnapshotTables(ctx, bq, flows, sources); err != nil {
		return nil, err
	}
	bound, refused := flow.BindAll(flows, Changelogs(sources))
	if err := apply(ctx, bq, t, bound, sources, opts, rep); err != nil {
		return nil, err
	}
	return bound, errors.Join(noSchema, refused)
}

func apply(ctx context.Context, bq *bigquery.Client, t Target, bound []*flow.Bound, sources map[string]SourceSchema, opts Options, rep *Report) error {
	loc := catalog.Location{Project: t.Project, DefaultDataset: t.Dataset}
	datasets := flowDatasets(bound, loc)
	srcs, keys := boundSources(bound)
	// The shared tables: dead letters, the append ledger, and the
	// compaction report (a table and a view, two lines).
	const shared, sharedObjects = 3, 4
	total := len(datasets) + len(srcs) + sharedObjects
	for _, b := range bound {
		total += flowObjectCount(b, opts)
	}
	if len(bound) > 0 {
		total++ // the status view
	}
	if opts.Progress != nil {
		opts.Progress.SetTotal(total)
	}

	// Datasets first: everything else lives in them.
	for _, ds := range datasets {
		if err := Dataset(ctx, bq, ds, rep); err != nil {
			return err
		}
		opts.Progress.Add(1)
	}
	var listed listing
	if !opts.Verify {
		var err error
		if listed, err = List(ctx, opts.Lister, datasets); err != nil {
			return err
		}
	}
	steps := make([]step, 0, len(srcs)+shared)
	for _, src := range srcs {
		steps = append(steps, step{objects: 1, run: func(r *Report) error {
			return changelogTable(ctx, bq, t.Dataset, sources[src], keys[src], listed, r)
		}})
	}
	steps = append(steps,
		step{objects: 1, run: func(r *Report) error {
			return deadLetters(ctx, bq, t.Dataset, t.DeadLetterRetentionDays, listed, r)
		}},
		step{objects: 1, run: func(r *Report) error { return appendsTable(ctx, bq, t.Dataset, listed, r) }},
		step{objects: 2, run: func(r *Report) error { return compactionReport(ctx, bq, t.Dataset, listed, r) }})
	if err := runSteps(steps, opts.Concurrency, opts.Progress, rep); err != nil {
		return err
	}
	// Then the flows: BigQuery checks a view's query when it is created, so
	// the changelogs it reads must exist.
	steps = steps[:0]
	for _, b := range bound {
		steps = append(steps, step{objects: flowObjectCount(b, opts), run: func(r *Report) error {
			return flowObjects(ctx, bq, loc, b, opts, listed, r)
		}})
	}
	if err := runSteps(steps, opts.Concurrency, opts.Progress, rep); err != nil {
		return err
	}
	if len(bound) == 0 {
		return nil
	}
	// The status view reads every flow's objects: it comes last.
	if opts.StatusWithGolds {
		opts.Progress.Add(1)
		return nil
	}
	err := Status(ctx, bq, loc, boundFlows(bound), rep)
	opts.Progress.Add(1)
	return err
}

// flowObjectCount is the number of objects (report lines) a flow has: its
// state table, its view and its table functions.
func flowObjectCount(b *flow.Bound, opts Options) int {
	n := 2 // state table and view
	if b.ChangeFeed() {
		n++ // change table
	}
	if opts.SkipTableFunctions {
		return n
	}
	return n + len(b.Routines())
}

func boundFlows(bound []*flow.Bound) []*flow.Flow {
	flows := make([]*flow.Flow, len(bound))
	for i, b := range bound {
		flows[i] = b.Flow
	}
	return flows
}

// flowDatasets lists the datasets of the flows: the default one first, then
// the others (targets named dataset.table) in name order. Each is read once
// per apply, however many flows write to it.
func flowDatasets(bound []*flow.Bound, loc catalog.Location) []string {
	seen := map[string]bool{loc.DefaultDataset: true}
	var others []string
	for _, b := range bound {
		if ds := loc.Dataset(b.Flow); !seen[ds] {
			seen[ds] = true
			others = append(others, ds)
		}
	}
	sort.Strings(others)
	return append([]string{loc.DefaultDataset}, others...)
}

// boundSources lists the sources of the bound flows in first-use order, and
// the keys of each source's first flow (its changelog's clustering).
func boundSources(bound []*flow.Bound) ([]string, map[string][]string) {
	var srcs []string
	keys := map[string][]string{}
	for _, b := range bound {
		src, ok := b.ChangelogSource()
		if !ok {
			continue // no changelog
		}
		if _, seen := keys[src]; !seen {
			srcs = append(srcs, src)
			keys[src] = b.Keys.Names()
		}
	}
	return srcs, keys
}

// Unbound lists the flows of flows that are not in bound (refused at
// binding): compaction keeps the changelog days of their sources.
func Unbound(flows []*flow.Flow, bound []*flow.Bound) []*flow.Flow {
	in := make(map[*flow.Flow]bool, len(bound))
	for _, b := range bound {
		in[b.Flow] = true
	}
	var out []*flow.Flow
	for _, f := range flows {
		if !in[f] {
			out = append(out, f)
		}
	}
	return out
}

// SnapshotTables reads the metadata of every table a snapshot flow reads
// (tables.get: no query job), adds each one's columns to sources under the
// flows' SourceKey, and returns the metadata by SourceKey. A table that
// does not exist is left out: its flows are refused at binding, naming it.
func SnapshotTables(ctx context.Context, bq *bigquery.Client, flows []*flow.Flow, sources map[string]SourceSchema) (map[string]*bigquery.TableMetadata, error) {
	mds := map[string]*bigquery.TableMetadata{}
	for _, st := range flow.SnapshotTables(flows) {
		md, err := bq.Dataset(st.Dataset).Table(st.Table).Metadata(ctx)
		if bqerror.NotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the snapshot table %s: %w", st, err)
		}
		key := flow.SnapshotKeyPrefix + st.String()
		sources[key] = SourceSchema{Source: key, Columns: bqschema.FromBigQuery(md.Schema), Origin: "BigQuery table " + st.String()}
		mds[key] = md
	}
	return mds, nil
}

// SnapshotSchemaSuffix ends the name of a snapshot table's schema file in
// a schemas folder: <dataset>.<table>.schema.json, BigQuery's JSON schema
// as bq show --schema --format=prettyjson dataset.table prints it.
const SnapshotSchemaSuffix = ".schema.json"

// SnapshotSchemaFiles adds to sources the columns of the snapshot tables
// flows read, from their schema files in dir (SnapshotSchemaSuffix), for
// work without BigQuery (bqcdc render without --project). A table without
// a file is left out: its flows are refused as without a schema.
func SnapshotSchemaFiles(dir string, flows []*flow.Flow, sources map[string]SourceSchema) error {
	for _, st := range flow.SnapshotTables(flows) {
		path := filepath.Join(dir, st.Dataset+"."+st.Table+SnapshotSchemaSuffix)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the schema of snapshot table %s: %w", st, err)
		}
		s, err := bigquery.SchemaFromJSON(b)
		if err != nil {
			return fmt.Errorf("%s: not a BigQuery JSON schema (bq show --schema --format=prettyjson prints one): %w", path, err)
		}
		key := flow.SnapshotKeyPrefix + st.String()
		sources[key] = SourceSchema{Source: key, Columns: bqschema.FromBigQuery(s), Origin: path}
	}
	return nil
}
