// Package status answers an operator's questions about a deployment from
// BigQuery alone: per flow, how fresh its view is, how much waits in its
// tail, how its compaction went, and what its source dead-lettered; per
// source, its changelog's size and last append. The per-flow facts come
// from the same query as the dataset's status view (catalog.StatusView,
// rendered by sql/render), so the console and `bqcdc status` agree; the
// per-source facts are table metadata (free).
//
// Cost of one Gather: the status query (each flow's changelog columns
// _cdc_source_ts and _cdc_ingested_at for the rows ingested in the last
// render.StatusDays days, the compaction runs of those days, a day of dead
// letters), one dead-letter query over the same day, and one tables.get per
// source.
package status

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Flow is one flow's row of the status view.
type Flow struct {
	Flow   string `json:"flow"`
	Target string `json:"target"`
	// Source is the topic, or a snapshot flow's dataset.table.
	Source string `json:"source"`
	// Kind is "stream" (a flow reading a topic) or "snapshot" (AUTO CDC
	// FROM SNAPSHOT: no changelog, so no freshness, tail or dead letters).
	Kind string `json:"kind"`
	// NewestSourceTS is the newest _cdc_source_ts among the changelog rows
	// ingested in the window: the newest change the view shows. Zero when
	// none was ingested in the window.
	NewestSourceTS time.Time `json:"newest_source_ts"`
	// LagSeconds is from NewestSourceTS to the query's clock (-1: unknown).
	LagSeconds     int64     `json:"lag_seconds"`
	LastIngestedAt time.Time `json:"last_ingested_at"`
	// TailRows are the changelog rows ingested after the flow's compaction
	// watermark (within the window): what each view query folds on the fly.
	TailRows        int64     `json:"tail_rows"`
	LastRun         *Run      `json:"last_run,omitempty"` // nil: no run in the window
	LastCompactedAt time.Time `json:"last_compacted_at"`
	Watermark       time.Time `json:"watermark"`
	// DeadLetters counts the source's dead letters of the last day;
	// DeadLetterReasons names the five most frequent stage: reason (count).
	DeadLetters       int64  `json:"dead_letters_1d"`
	DeadLetterReasons string `json:"dead_letter_reasons,omitempty"`
}

// Run is a flow's latest compaction run.
type Run struct {
	At          time.Time `json:"at"`
	Outcome     string    `json:"outcome"`
	Events      int64     `json:"events_read"`
	Jobs        int64     `json:"jobs"`
	BytesBilled int64     `json:"bytes_billed"`
	Error       string    `json:"error,omitempty"`
	// AppliedVersion and RowsSkipped: a snapshot flow's run, the version
	// applied (a SQL literal) and the rows of its table never applied.
	AppliedVersion string `json:"applied_version,omitempty"`
	RowsSkipped    int64  `json:"snapshot_rows_skipped,omitempty"`
	// FeedHeld says why the run did not materialize the change feed.
	FeedHeld string `json:"change_feed_held,omitempty"`
	// KeysOutsideRange: the run touched keys outside the state's key
	// range (flow.StateKeyRangeProperty).
	KeysOutsideRange bool `json:"keys_outside_range,omitempty"`
}

// Source is one changelog, from its table metadata.
type Source struct {
	Source string `json:"source"`
	Table  string `json:"table"`
	Rows   uint64 `json:"rows"`
	Bytes  int64  `json:"bytes"`
	// StreamingRows are rows still in the Storage Write buffer (estimated
	// by BigQuery, not yet in Rows).
	StreamingRows uint64    `json:"streaming_rows"`
	LastModified  time.Time `json:"last_modified"`
	// LastAppend is the newest _cdc_ingested_at of the window (zero: none).
	LastAppend time.Time `json:"last_append"`
	Error      string    `json:"error,omitempty"` // the metadata could not be read
	// Listed: the changelog was found by the dataset's listing, which
	// gives no sizes (Rows, Bytes, StreamingRows, LastModified are unread).
	Listed bool `json:"listed,omitempty"`
}

// Options tune Gather.
type Options struct {
	// Lister lists the default dataset: with more sources than
	// ReadSources, their changelogs are found by the listing (a request
	// per 1,000 tables) instead of one metadata read each (which at
	// 5,000 sources is a minute of BigQuery's per-method quota), and
	// their sizes are not shown; --source shows them.
	Lister interface {
		ListTables(ctx context.Context, dataset string) ([]clients.ListedTable, error)
	}
	// ReadSources: up to this many sources are read one by one (0:
	// DefaultReadSources).
	ReadSources int
	// Golds are the materialized views to report (one metadata read each).
	Golds []*flow.Gold
}

// Gold is the status of a materialized view: exact now by construction,
// its refreshed table as of the position its label records.
type Gold struct {
	View   string `json:"view"`
	Source string `json:"source"` // the target or STREAM(topic) it reads
	// Refreshed: compaction keeps <view>_refreshed; RefreshedTo is the
	// change feed position its last refresh reached (zero: never).
	Refreshed   bool      `json:"refreshed"`
	RefreshedTo time.Time `json:"refreshed_to,omitempty"`
}

// DefaultReadSources is Options.ReadSources' default.
const DefaultReadSources = 200

// DeadLetters counts the dead letters of the last day with one stage and
// reason.
type DeadLetters struct {
	Topic  string `json:"topic"`
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
	Count  int64  `json:"count"`
}

// Report is everything Gather found.
type Report struct {
	Project     string        `json:"project"`
	Dataset     string        `json:"dataset"`
	At          time.Time     `json:"at"`
	Flows       []Flow        `json:"flows"`
	Golds       []Gold        `json:"materialized_views,omitempty"`
	Sources     []Source      `json:"sources"`
	DeadLetters []DeadLetters `json:"dead_letters_1d"`
	Problems    []Problem     `json:"problems"`
}

// Gather reads the status of flows in loc.
func Gather(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow) (Report, error) {
	return GatherWith(ctx, bq, loc, flows, Options{})
}

// GatherWith is Gather with options. It makes one query for the flows
// (the status view's), one for the dead letters, and reads the sources'
// changelogs (see Options).
func GatherWith(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, o Options) (Report, error) {
	rep := Report{Project: loc.Project, Dataset: loc.DefaultDataset, At: time.Now().UTC()}
	if o.ReadSources <= 0 {
		o.ReadSources = DefaultReadSources
	}
	var err error
	if srcs := flow.Sources(flows); len(srcs) > o.ReadSources && o.Lister != nil {
		if rep.Sources, err = listedSources(ctx, o.Lister, loc, srcs); err != nil {
			return rep, err
		}
	} else {
		rep.Sources = sources(ctx, bq, loc, flows)
	}
	// A flow whose changelog is missing would fail the whole query: it is
	// left out, and its source reported.
	missing := map[string]bool{}
	for _, s := range rep.Sources {
		missing[s.Source] = s.Error != ""
	}
	var readable []*flow.Flow
	for _, f := range flows {
		if src, ok := f.ChangelogSource(); !ok || !missing[src] {
			readable = append(readable, f)
		}
	}
	if len(readable) > 0 {
		sql, err := render.Status(readable, loc)
		if err != nil {
			return rep, err
		}
		rows, err := read(ctx, bq, sql)
		if err != nil {
			return rep, fmt.Errorf("reading the status of %d flows (bqcdc apply creates the report and dead-letter tables): %w", len(readable), err)
		}
		for _, r := range rows {
			rep.Flows = append(rep.Flows, flowOf(r))
		}
	}
	sort.Slice(rep.Flows, func(i, j int) bool { return rep.Flows[i].Flow < rep.Flows[j].Flow })
	last := map[string]time.Time{}
	for _, f := range rep.Flows {
		if f.LastIngestedAt.After(last[f.Source]) {
			last[f.Source] = f.LastIngestedAt
		}
	}
	for i := range rep.Sources {
		rep.Sources[i].LastAppend = last[rep.Sources[i].Source]
	}
	if rep.DeadLetters, err = deadLetters(ctx, bq, loc); err != nil {
		return rep, err
	}
	for _, g := range o.Golds {
		rep.Golds = append(rep.Golds, gold(ctx, bq, loc, g))
	}
	return rep, nil
}

// gold reads a materialized view's state table's label: a refreshed view
// has one (bqcdc apply makes it).
func gold(ctx context.Context, bq *bigquery.Client, loc catalog.Location, g *flow.Gold) Gold {
	out := Gold{View: g.Name.String(), Source: g.From.String()}
	if g.Stream.Name != "" {
		out.Source = "STREAM(" + g.Stream.Name + ")"
	}
	md, err := bq.Dataset(loc.GoldDataset(g)).Table(catalog.GoldStateName(g)).Metadata(ctx)
	if err != nil {
		return out // not refreshed by compaction (or not applied yet)
	}
	out.Refreshed = true
	if w, ok := catalog.LabelMicros(md.Labels[catalog.LabelWatermark]); ok {
		out.RefreshedTo = w
	}
	return out
}

func read(ctx context.Context, bq *bigquery.Client, sql string) ([]map[string]bigquery.Value, error) {
	it, err := bq.Query(sql).Read(ctx)
	if err != nil {
		return nil, err
	}
	return clients.Collect(it)
}

func flowOf(r map[string]bigquery.Value) Flow {
	f := Flow{Flow: str(r["flow"]), Target: str(r["target"]), Source: str(r["source"]), Kind: str(r["kind"]),
		NewestSourceTS: ts(r["newest_source_ts"]), LagSeconds: -1, LastIngestedAt: ts(r["last_ingested_at"]),
		TailRows: num(r["tail_rows"]), LastCompactedAt: ts(r["last_compacted_at"]), Watermark: ts(r["watermark"]),
		DeadLetters: num(r["dead_letters_1d"]), DeadLetterReasons: str(r["dead_letter_reasons"])}
	if v, ok := r["lag_seconds"].(int64); ok {
		f.LagSeconds = v
	}
	if at := ts(r["last_run_at"]); !at.IsZero() {
		f.LastRun = &Run{At: at, Outcome: str(r["last_run_outcome"]), Events: num(r["last_run_events"]), Jobs: num(r["last_run_jobs"]),
			BytesBilled: num(r["last_run_bytes_billed"]), Error: str(r["last_run_error"]),
			AppliedVersion: str(r["last_run_applied_version"]), RowsSkipped: num(r["last_run_snapshot_rows_skipped"]),
			FeedHeld: str(r["last_run_change_feed_held"]), KeysOutsideRange: r["last_run_keys_outside_range"] == true}
	}
	return f
}

// deadLetters reads the last day's dead letters by topic, stage and reason,
// the most frequent first (every topic: a malformed push names none).
func deadLetters(ctx context.Context, bq *bigquery.Client, loc catalog.Location) ([]DeadLetters, error) {
	sql := fmt.Sprintf("SELECT IFNULL(topic, '') AS topic, stage, reason, COUNT(*) AS n FROM %s.%s.%s\n"+
		"WHERE dead_lettered_at >= TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL 1 DAY)\nGROUP BY 1, 2, 3\nORDER BY n DESC, topic, stage, reason\nLIMIT 100",
		catalog.QuoteIdent(loc.Project), catalog.QuoteIdent(loc.DefaultDataset), catalog.QuoteIdent(catalog.DeadLetterTable))
	rows, err := read(ctx, bq, sql)
	if err != nil {
		return nil, fmt.Errorf("reading the last day's dead letters: %w", err)
	}
	out := []DeadLetters{}
	for _, r := range rows {
		out = append(out, DeadLetters{Topic: str(r["topic"]), Stage: str(r["stage"]), Reason: str(r["reason"]), Count: num(r["n"])})
	}
	return out, nil
}

// listedSources finds each source's changelog in the listing of the
// default dataset.
func listedSources(ctx context.Context, l interface {
	ListTables(ctx context.Context, dataset string) ([]clients.ListedTable, error)
}, loc catalog.Location, srcs []string) ([]Source, error) {
	tables, err := l.ListTables(ctx, loc.DefaultDataset)
	if err != nil {
		return nil, fmt.Errorf("listing dataset %s: %w", loc.DefaultDataset, err)
	}
	there := make(map[string]bool, len(tables))
	for _, t := range tables {
		there[t.Name] = true
	}
	out := make([]Source, len(srcs))
	for i, src := range srcs {
		out[i] = Source{Source: src, Table: catalog.TableName(src), Listed: true}
		if !there[out[i].Table] {
			out[i].Error = "no changelog table (run bqcdc apply)"
		}
	}
	return out, nil
}

// sourceReads bounds the changelog metadata reads in flight.
const sourceReads = 16

// sources reads each source's changelog metadata (free: no query job),
// sourceReads at a time.
func sources(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow) []Source {
	srcs := flow.Sources(flows)
	out := make([]Source, len(srcs))
	var wg sync.WaitGroup
	slots := make(chan struct{}, sourceReads)
	for i, src := range srcs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			out[i] = source(ctx, bq, loc, src)
		})
	}
	wg.Wait()
	return out
}

func source(ctx context.Context, bq *bigquery.Client, loc catalog.Location, src string) Source {
	s := Source{Source: src, Table: catalog.TableName(src)}
	md, err := bq.Dataset(loc.DefaultDataset).Table(s.Table).Metadata(ctx)
	switch {
	case bqerror.NotFound(err):
		s.Error = "no changelog table (run bqcdc apply)"
	case err != nil:
		s.Error = fmt.Sprintf("reading the changelog's metadata: %v", err)
	default:
		s.Rows, s.Bytes, s.LastModified = md.NumRows, md.NumBytes, md.LastModifiedTime.UTC()
		if sb := md.StreamingBuffer; sb != nil {
			s.StreamingRows = sb.EstimatedRows
		}
	}
	return s
}

func str(v bigquery.Value) string {
	s, _ := v.(string)
	return s
}

func num(v bigquery.Value) int64 {
	n, _ := v.(int64)
	return n
}

func ts(v bigquery.Value) time.Time {
	t, _ := v.(time.Time)
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
