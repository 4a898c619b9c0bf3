// Package compact folds changelog rows into each flow's state table, so the
// flow's view reads the state plus a short tail instead of the whole
// changelog, and materializes each flow's change feed. It is what the
// scheduled Compact function and `bqcdc compact` run.
//
// # The state is levels
//
// A change-stream flow's state table holds levels. Each run appends one, in
// ONE INSERT: the events that decide the target among the changelog rows
// ingested in (watermark, new watermark] (SCD 1: per key the newest event,
// the newest delete, and the newest upsert setting each IGNORE NULL UPDATES
// column; SCD 2 and bitemporal: every distinct event, as re-cutting history
// when a late event arrives needs them all), plus a watermark marker. A
// run reads the changelog rows after the watermark and nothing of the
// state, so what it is billed for grows with the change, not the history.
// Views fold every level with the changelog tail after their pruning
// bound: the events that decide the target among all events are among the
// levels' and the tail's, and extra events that do not decide it change
// nothing (a message counted twice counts once: events are deduplicated by
// message id). Once a day (Options.MaintainEvery) a run folds the levels
// into one (an INSERT, then a DELETE of what it folded; both count until
// the DELETE, which folds the same), so the state stays about the size of
// what decides the target: that is the one statement that reads the whole
// state, amortized over a day's runs.
//
// # The change feed is materialized
//
// A flow of SCD type 1 or 2 has a change table: each run also inserts the
// target's row-level changes at the positions it folds (the difference
// between the target as of each position and as of the key's previous
// one), with a marker, reading the changelog rows of the range and the
// state of the keys they touch only, selected by constant filters on the
// state's clustering columns. <target>_changes(from, to) reads the
// partitions of its range. A run that crashed after it wrote changes but
// before it recorded its progress writes them again; readers count the
// newest run's per key and position.
//
// # Why it is correct without transactions
//
// Every INSERT is atomic, and every state a crash can leave folds to the
// same target: a level written twice counts once; a maintenance INSERT
// whose DELETE did not run leaves levels that fold the same as its own. A
// re-run after a crash reads from the watermark its labels record (which
// lag the state's markers, never lead them) and folds the same rows again.
// Levels only reduce the events they fold as of their watermark, and
// maintenance only those ingested by the watermark the run started from,
// so the state always holds what decides the target as of any later
// watermark: the change feed's baselines.
//
// # Why no late row is lost
//
// _cdc_ingested_at is stamped by the ingest function before its append, and
// an append completes within the function's timeout, so a row becomes
// visible at most VisibilityLag after its _cdc_ingested_at. A run starting
// at time C folds the rows up to the new watermark C - VisibilityLag: every
// row at or before it was visible when the run read, so it is folded; a row
// appended later has a later _cdc_ingested_at and stays in the view's tail
// until the next run folds it. Concurrent runs of one flow are safe too:
// each folds rows after the watermark it read, and a level written twice
// counts once. Maintenance deletes only levels written more than
// MaintainMargin before it started, which every run that wrote them had
// committed before it read the state.
//
// # Why an idle flow costs no query
//
// Compaction is an optimisation: a view is exact whether or not its tail
// was folded. So a run may skip a flow whose changelog has not changed, and
// decides that from metadata BigQuery returns for free (tables.get, not a
// query job): the changelog's row and byte counts, its streaming buffer
// statistics (where Storage Write appends show before they are committed to
// columnar storage) and its last modification time, hashed into a
// signature. After each run the flow's state table carries labels (see
// state.go): its watermark, the signature the run started from, when that
// signature was first seen, and whether the run left nothing unfolded of
// it. A flow is idle, and costs no job, when the changelog's signature
// equals the labelled one and that signature is clean: a run whose
// watermark reached the time the signature was first seen folded every row
// the signature reflects (those rows were appended before it was read).
// Metadata may lag appends: then it changes later and a later run folds the
// rows; one run late, never missed. As a further net, a flow is checked with
// a query at least every FullCheckEvery even when its metadata says idle.
//
// # Runs that scale out
//
// A run reads the state tables' metadata, orders the flows by how long ago
// they were last checked (the longest waiting first), and compacts up to
// Concurrency flows at once; a slow or failing flow holds one slot only. A
// run starts no flow once its Budget is spent: those flows are reported as
// deferred and, having waited longest, go first next time; nothing is
// folded twice (each fold starts from the watermark the previous one
// committed) or skipped for good. A deployment too large for one run's
// budget shards the flows by source (Selection.Shard of Shards), one Cloud
// Scheduler job per shard. Per flow a compacted run costs three query jobs
// (statistics, the fold, the change feed), once a day two more
// (maintenance), and, only without labels, a marker read. Reports are
// appended through the Storage Write API (no DML on a shared table).
//
// Compaction talks to BigQuery through two small interfaces (Warehouse,
// Objects), so everything above is unit-tested against a fake.
package compact

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/metrics"
)

// Steps of a flow's run that Options.AfterStep is called after, in order.
// (The state labels, report row and changelog retention follow them; none
// affects what a view shows.)
const (
	// A state of buckets written in ranges (Options.BucketsPerJob): after
	// each range of the fold but the last (the commit point), and after
	// each range of maintenance's fold but the last.
	StepFoldChunk     = "fold chunk"
	StepMaintainChunk = "maintain chunk"
	StepFold          = "fold"    // the INSERT of the new level: the commit point
	StepChanges       = "changes" // the INSERT of the change feed's rows
	StepGold          = "gold"    // refreshing a materialized view's state from the change feed (after StepChanges)
	StepGC            = "gc"      // maintenance (levels folded into one, what it folded deleted); snapshot flows: deleting superseded rows
	StepView          = "view"    // moving the view's partition-pruning bound
)

// The other statements of a run, each a Stmt's Step (and a dry run's plan
// line): the reads a run makes to know what to do, and the writes within
// the steps above.
const (
	StepStats        = "stats"            // what the run would fold (one row)
	StepFirst        = "first position"   // the oldest position of a flow's events (one row)
	StepLate         = "changes late"     // the touched keys whose archive the change feed reads too (one row)
	StepArchiveSlots = "archive days"     // the archive days a state's markers name, before maintenance writes one (one row)
	StepMarker       = "marker"           // the state's newest watermark marker
	StepAppends      = "appends"          // the append ledger: sources with rows to fold
	StepExpire       = "expire changelog" // changelog days every flow folded, deleted
	StepMaintain     = "maintain"         // the state's levels folded into one (StepGC)
	StepMaintainGC   = "maintain gc"      // what maintenance folded, deleted (StepGC)
	StepGoldTouched  = "gold touched"     // the groups a refresh of a materialized view touches
	StepGoldFinal    = "gold final"       // a materialized view's final windows appended (StepGold)
	StepGoldGC       = "gold gc"          // a materialized view's state maintained (StepGC)
	StepHistoryOff   = "history off"      // an SCD 1 state's history marked incomplete (its property turned off)
)

// Options configure a Compactor.
type Options struct {
	// VisibilityLag bounds how long after its _cdc_ingested_at a changelog
	// row can become visible: the ingest function's timeout plus clock skew.
	VisibilityLag time.Duration
	// TombstoneRetention keeps SCD 1 delete tombstones this long (by
	// ingestion time); 0 keeps them forever.
	TombstoneRetention time.Duration
	// ChangelogRetention deletes changelog days older than this once every
	// flow reading the source has folded them; 0 keeps the changelog forever.
	ChangelogRetention time.Duration
	// Concurrency bounds the flows compacted at once (default 8). Each
	// holds at most one query job at a time; BigQuery runs up to 100
	// interactive queries per project at once and two mutating statements
	// per table (every flow writes its own state table).
	Concurrency int
	// Budget is how long a run may start flows (0: no limit); set it below
	// the function's timeout, leaving time for the flows already started.
	Budget time.Duration
	// FullCheckEvery bounds how long a flow the metadata calls idle goes
	// without a query that checks it (default 6 h; negative: never).
	FullCheckEvery time.Duration
	// Ledger trusts the append ledger (catalog.AppendsTable) that ingest
	// writes: Prepare lists the datasets (Lister) and reads the ledger in
	// one query, and the flows with nothing to fold cost no further read
	// (see ledger.go). Off, or without a Lister, or while the ledger is
	// younger than LedgerSettle, every changelog and state table is read.
	Ledger bool
	Lister apply.Lister
	// LedgerSettle: the ledger is trusted only for what a flow checked
	// this long after the ledger table was made (default 1 h): ingest
	// instances deployed before it append without covering.
	LedgerSettle time.Duration
	// MaintainEvery is how often a flow's state levels are folded into one
	// (default DefaultMaintainEvery; negative: never). It is the one
	// statement that reads a flow's whole state.
	MaintainEvery time.Duration
	// MaintainMargin: maintenance deletes only the levels written more than
	// this long before it started (default DefaultMaintainMargin). It must
	// exceed the longest a run takes from its start to its fold's commit
	// (the function's timeout), so every level it deletes was committed
	// before it read the state.
	MaintainMargin time.Duration
	// MaintainGranularity truncates maintenance's cutoff (default 24 h: the
	// state's day partitions, so its DELETE drops whole partitions, which
	// BigQuery does not bill). Tests set it small to delete the levels of
	// runs minutes apart.
	MaintainGranularity time.Duration
	// ChangeFeedEvery materializes a flow's change feed only once it lags
	// this long (0: every run). The feed's statement reads the blocks of
	// the keys its range touches, most of the state when a run touches most
	// blocks: fewer, longer ranges read it fewer times. The feed is final up
	// to where it is materialized, so it trails the views by up to this.
	ChangeFeedEvery time.Duration
	// ChangeSlice bounds the positions one statement materializes in a
	// change feed (default DefaultChangeSlice; negative: no bound), and
	// MaxChangeSlices the statements a run writes (default 24): a feed's
	// first run over a long history catches up slice by slice, runs apart.
	ChangeSlice     time.Duration
	MaxChangeSlices int
	// SnapshotSettle: while a snapshot flow's table was modified less than
	// this long ago, a run leaves its newest version for a later run (older
	// ones still apply), so a snapshot written in several loads is not
	// applied half loaded, its remaining rows then skipped as late (default
	// DefaultSnapshotSettle; negative: off). Views show the newest version
	// meanwhile: they read the snapshots newer than the applied one.
	SnapshotSettle time.Duration
	// DryRun, when set, makes every run read what it would do (the
	// statistics: SELECTs over the changelog after the watermark) and price
	// the statements that write with it instead of running them
	// (Report.Plan); nothing is written: no state, view, label or report.
	DryRun Estimator
	// Model, in a dry run, prices each statement a second way beside
	// DryRun (Statement.Model): the cost model's estimate beside
	// BigQuery's (bqcdc compact --dry-run against BigQuery).
	Model Estimator
	// Reports receives one row per flow and run, for the report table
	// (catalog.CompactionRunsTable); nil writes none.
	Reports ReportWriter
	// Now is the clock (tests replace it).
	Now func() time.Time
	// AfterStep runs after each step of a flow's run; an error stops the run
	// there, as a crash would (tests inject failures with it).
	AfterStep func(flow, step string) error
	// Attempts and Backoff govern retries of transient BigQuery errors
	// (concurrent DML on the same table, rate limits, 5xx).
	Attempts int
	Backoff  time.Duration
	// Log receives one line per flow and run (its outcome); nil discards.
	Log *slog.Logger
	// Golds are the deployment's materialized views: a run of a flow
	// refreshes the state of those over it that retraction keeps (gold.go).
	Golds []*flow.Gold
	// GoldTouchedAbove: the refresh of a materialized view whose state
	// holds more bytes than this first reads which groups the run touches,
	// so that it reads those groups' blocks of the state only (default
	// DefaultGoldTouchedAbove; negative: always). Below it, one statement
	// reading the whole state costs less than two.
	GoldTouchedAbove int64
	// FeedKeysAbove: a change feed that lags (its range starts before the
	// run's watermark) of a flow whose state holds more bytes than this
	// first reads the keys of its range from the changelog, so that it
	// reads those keys' blocks of the state only (default
	// DefaultFeedKeysAbove; negative: always). Below it, reading the whole
	// state costs less than the query's 10 MB minimums. The same bound
	// decides whether the feed of an archived SCD 2 state asks for its
	// late keys and reads its levels only (render/archive.go).
	FeedKeysAbove int64
	// BucketsPerJob: the most buckets of a state of buckets one statement
	// writes (default flow.BucketsPerJob: BigQuery's 4,000 partitions a
	// job, the NULL partition among them); of a state partitioned by key
	// range, one less (render.PerJob). Tests lower it to split
	// runs.
	BucketsPerJob int
	// GoldFeedRetention is how far back a materialized view's change feed
	// (<name>_changes) reaches: maintenance keeps the versions it compares
	// for this long (default DefaultGoldFeedRetention; negative: none).
	GoldFeedRetention time.Duration
	// GoldMaintainGrowth: a materialized view's state is maintained, with
	// its source flow's maintenance, only once it holds more than (1 +
	// this) times the rows its last maintenance left (default
	// DefaultGoldMaintainGrowth; negative: at every maintenance of the
	// flow). Its DELETE is billed for the whole state (a table without
	// partitions), so deferred until the versions written since are that
	// share of it, it costs per run at most (1 + g) / g times what the
	// runs write, not a read of every group a day; a read of
	// <name>_refreshed meanwhile reads at most that share more.
	GoldMaintainGrowth float64
	// Metrics records each flow's run (outcome, duration, events, jobs,
	// bytes billed, watermark age); nil records nothing.
	Metrics *metrics.Recorder
}

// ReportWriter appends report rows (bqwrite.Writer does, through the
// Storage Write API).
type ReportWriter interface {
	Append(ctx context.Context, table string, rows []map[string]any) error
}

// Compactor runs compactions against one BigQuery project.
type Compactor struct {
	wh   Warehouse
	objs Objects
	loc  catalog.Location
	opts Options

	// views remembers, per flow, the columns and pruning bound this
	// compactor last rendered the view with, so a run with nothing to fold
	// reads the view's metadata only when the flow's columns changed.
	views sync.Map // flow name -> string
}

// New returns a compactor of a BigQuery client's project.
func New(bq *bigquery.Client, loc catalog.Location, opts Options) *Compactor {
	w, objs := BigQuery(bq, loc)
	return NewWith(w, objs, loc, opts)
}

// BigQuery is the warehouse and objects New compacts with, for a caller
// that wraps them (a test that records the statements a run sends).
func BigQuery(bq *bigquery.Client, loc catalog.Location) (Warehouse, Objects) {
	w := bigQuery{bq: bq, loc: loc}
	return w, w
}

// DefaultMaintainEvery and DefaultMaintainMargin are the defaults of
// Options.MaintainEvery and MaintainMargin: once a day, and an hour (the
// longest a Cloud Run function runs).
const (
	DefaultMaintainEvery  = 24 * time.Hour
	DefaultMaintainMargin = time.Hour
	// DefaultGoldTouchedAbove is where a state's blocks outweigh the 10 MB
	// BigQuery bills at least for the touched groups' query (the cost
	// benchmark's gold sub-benchmarks: a filtered refresh costs three 10 MB
	// minimums, an unfiltered one two and the state).
	DefaultGoldTouchedAbove = 32 << 20
	// DefaultFeedKeysAbove: the keys' query is billed at least 10 MB for
	// each of the changelog and the change table.
	DefaultFeedKeysAbove = 20 << 20
	// DefaultGoldFeedRetention: a week of a materialized view's changes.
	DefaultGoldFeedRetention = 7 * 24 * time.Hour
	// DefaultGoldMaintainGrowth: a quarter more rows than the last
	// maintenance left (amortized, its DELETE costs at most five times the
	// versions written since; the refreshed view reads at most a quarter
	// more).
	DefaultGoldMaintainGrowth = 0.25
	// DefaultChangeSlice: a day of positions per statement.
	DefaultChangeSlice = 24 * time.Hour
	// DefaultLedgerSettle: longer than a deployment of the ingest function
	// takes to replace its instances.
	DefaultLedgerSettle = time.Hour
)

// NewWith returns a compactor over a warehouse and the objects' keeper
// (tests pass fakes).
func NewWith(wh Warehouse, objs Objects, loc catalog.Location, opts Options) *Compactor {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.MaxChangeSlices <= 0 {
		opts.MaxChangeSlices = 24
	}
	if opts.BucketsPerJob <= 0 {
		opts.BucketsPerJob = flow.BucketsPerJob
	}
	// Zero is "the default" for the rest (a negative duration or size
	// means off where the option says so).
	orDefault(&opts.Attempts, 6)
	orDefault(&opts.Backoff, time.Second)
	orDefault(&opts.FullCheckEvery, 6*time.Hour)
	orDefault(&opts.SnapshotSettle, DefaultSnapshotSettle)
	orDefault(&opts.MaintainEvery, DefaultMaintainEvery)
	orDefault(&opts.MaintainMargin, DefaultMaintainMargin)
	orDefault(&opts.GoldTouchedAbove, DefaultGoldTouchedAbove)
	orDefault(&opts.FeedKeysAbove, DefaultFeedKeysAbove)
	orDefault(&opts.GoldFeedRetention, DefaultGoldFeedRetention)
	orDefault(&opts.GoldMaintainGrowth, DefaultGoldMaintainGrowth)
	orDefault(&opts.ChangeSlice, DefaultChangeSlice)
	orDefault(&opts.MaintainGranularity, 24*time.Hour)
	orDefault(&opts.LedgerSettle, DefaultLedgerSettle)
	return &Compactor{wh: wh, objs: objs, loc: loc, opts: opts}
}

// Report is the outcome of one flow's run.
type Report struct {
	Flow              string        `json:"flow"`
	Target            string        `json:"target"`
	Source            string        `json:"source"`
	Outcome           string        `json:"outcome"` // see Outcomes
	EventsRead        int64         `json:"events_read"`
	WithoutSequence   int64         `json:"events_without_sequence"`
	KeysTouched       int64         `json:"keys_touched"`
	RowsWritten       int64         `json:"rows_written"` // from the fold's statistics (the emulator reports 0)
	WatermarkBefore   time.Time     `json:"watermark_before"`
	WatermarkAfter    time.Time     `json:"watermark_after"`
	Generation        time.Time     `json:"generation,omitempty"`
	Maintained        bool          `json:"maintained,omitempty"`          // the run folded the state's levels into one
	Golds             int           `json:"golds_refreshed,omitempty"`     // materialized views over the flow whose state the run refreshed
	GoldErrors        []string      `json:"gold_errors,omitempty"`         // those it could not refresh (the flow's run still counts)
	FeedHeld          string        `json:"feed_held,omitempty"`           // why the change feed was not materialized (the run still counts)
	KeysOutsideRange  bool          `json:"keys_outside_range,omitempty"`  // a state partitioned by key range: a touched key fell outside it (flow.StateKeyRangeProperty)
	KeyRangeSuggested string        `json:"key_range_suggested,omitempty"` // with KeysOutsideRange: START:END holding the run's keys with room to grow (flow.KeyRange.Widened)
	Plan              []Statement   `json:"plan,omitempty"`                // a dry run: the statements the run would execute, priced
	LedgerIdle        bool          `json:"ledger_idle,omitempty"`         // idle from the listing and the append ledger: not a table of the flow was read
	Jobs              int           `json:"jobs"`                          // query jobs this flow's run started
	BytesBilled       int64         `json:"bytes_billed"`                  // by those jobs (the emulator reports 0)
	Duration          time.Duration `json:"duration_ns"`
	Error             string        `json:"error,omitempty"`
	// Unreachable: the run failed because BigQuery could not be reached
	// at all (bqerror.Unreachable): the compact function answers 503.
	Unreachable bool `json:"unreachable,omitempty"`

	// Snapshot flows: the applied version (a SQL literal of the version
	// column, as far as the run read), and the rows of the snapshot table
	// that will never be applied: loaded with a version at or before the
	// applied one after it was applied, or with a NULL version (counted
	// over the table's life, by every run).
	AppliedVersion string `json:"applied_version,omitempty"`
	RowsSkipped    int64  `json:"snapshot_rows_skipped,omitempty"`

	// Change-stream flows whose run read the changelog's new rows: the
	// newest source time and ingestion time among them, and the rows left
	// after the run's watermark (TailRows nil: not read). The status view
	// reads them from the report table when it names no changelog.
	NewestSourceTS time.Time `json:"newest_source_ts,omitzero"`
	LastIngestedAt time.Time `json:"last_ingested_at,omitzero"`
	TailRows       *int64    `json:"tail_rows,omitempty"`
}

// DefaultSnapshotSettle is Options.SnapshotSettle's default: longer than
// the gap between the loads of one snapshot written in parts, short beside
// the compaction schedule's 10 minutes.
const DefaultSnapshotSettle = 5 * time.Minute

// Outcomes.
const (
	Compacted = "compacted"  // a new generation was written
	UpToDate  = "up to date" // checked with a query: nothing to fold
	Idle      = "idle"       // the changelog's metadata is unchanged: no query
	Deferred  = "deferred"   // the run's budget was spent before the flow's turn
	Settling  = "settling"   // snapshot flows: the only newer version's table changed within SnapshotSettle
	Failed    = "failed"
)

// Selection is what one run compacts.
type Selection struct {
	// Flows are every deployed flow that binds to its changelog.
	Flows []*flow.Bound
	// Names restricts the run to these flows (all when empty).
	Names []string
	// Unbound are the deployed flows that do not bind: their sources'
	// changelog days are kept, as those flows will need them once fixed.
	Unbound []*flow.Flow
	// Changelogs are the changelog tables' metadata by source, as read
	// when binding; the run reads what is missing.
	Changelogs map[string]*bigquery.TableMetadata
	// Shard of Shards (Shards > 1) restricts the run to the flows of the
	// sources in that shard (by a hash of the source).
	Shard, Shards int
	// Sharded: Flows are of Shard already (Prepare shards before binding).
	Sharded bool
	// Idle are flows Prepare found idle from the listing and the append
	// ledger: not bound, reported idle without any read.
	Idle []IdleFlow
}

// Run compacts every flow; a failing flow does not stop the others. Then it
// expires changelog days every flow has folded.
func (c *Compactor) Run(ctx context.Context, flows []*flow.Bound) []Report {
	reports, _ := c.Compact(ctx, Selection{Flows: flows})
	return reports
}

// RunSelected compacts the flows of all named in names (every flow when
// names is empty); see Selection.
func (c *Compactor) RunSelected(ctx context.Context, all []*flow.Bound, names []string, unbound []*flow.Flow) ([]Report, error) {
	return c.Compact(ctx, Selection{Flows: all, Names: names, Unbound: unbound})
}

// Flow compacts one flow now.
func (c *Compactor) Flow(ctx context.Context, b *flow.Bound) Report {
	reports, err := c.Compact(ctx, Selection{Flows: []*flow.Bound{b}})
	if err != nil {
		return Report{Flow: b.Name, Target: b.Target.String(), Source: sourceName(b), Outcome: Failed, Error: err.Error()}
	}
	return reports[0]
}

// orDefault sets an option left at its zero value to its default.
func orDefault[T comparable](opt *T, def T) {
	var zero T
	if *opt == zero {
		*opt = def
	}
}
