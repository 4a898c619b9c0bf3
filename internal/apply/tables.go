// Package apply creates and updates what bqcdc keeps in BigQuery: the
// datasets, one changelog table per source, the deployment's tables
// (dead letters, the append ledger, compaction runs, the status view and
// its table of flows: tables.go), and each flow's objects as its plan
// (internal/plan) lists them: state and change tables and view (views.go)
// and table functions (functions.go), and each materialized view's
// objects (gold.go, from the view's plan). Every
// step compares what exists with what is wanted and changes only the
// difference; a listing of each dataset (listing.go) and the spec label
// each object carries let a second apply of ten thousand flows read no
// object. Before that it finds each source's schema (schemas.go: the
// registry, else a .avsc file; a source whose schema is bad refuses only
// its flows) and binds the flows (all.go), keeps of contested flows the
// one the deployment names (contested.go), and brings a flow along when
// ingest adds columns to its changelog (follow.go).
package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Report lists what a run did, one line per object.
type Report []string

// add records one line; a nil Report records nothing (compaction brings
// objects up to date without reporting them).
func (r *Report) add(format string, args ...any) {
	if r != nil {
		*r = append(*r, fmt.Sprintf(format, args...))
	}
}

// Dataset creates the dataset if it does not exist.
func Dataset(ctx context.Context, bq *bigquery.Client, dataset string, rep *Report) error {
	ds := bq.Dataset(dataset)
	if _, err := ds.Metadata(ctx); err == nil {
		rep.add("dataset %s: exists", dataset)
		return nil
	} else if !bqerror.NotFound(err) {
		return fmt.Errorf("reading dataset %s: %w", dataset, err)
	}
	md := &bigquery.DatasetMetadata{Description: "bqcdc change data: changelogs, snapshots and views"}
	if bq.Location != "" {
		md.Location = bq.Location
	}
	if err := ds.Create(ctx, md); err != nil {
		return fmt.Errorf("creating dataset %s: %w", dataset, err)
	}
	rep.add("dataset %s: created", dataset)
	return nil
}

// Changelog creates or evolves the changelog table of one source.
func Changelog(ctx context.Context, bq *bigquery.Client, dataset string, src SourceSchema, clusterBy []string, rep *Report) error {
	return changelogTable(ctx, bq, dataset, src, clusterBy, nil, rep)
}

func changelogTable(ctx context.Context, bq *bigquery.Client, dataset string, src SourceSchema, clusterBy []string, listed listing, rep *Report) error {
	name := catalog.TableName(src.Source)
	labels := map[string]string{catalog.SourceLabel: catalog.LabelValue(src.Source), catalog.SourceHashLabel: catalog.SourceHash(src.Source)}
	if src.SchemaID != 0 {
		labels[catalog.ReaderSchemaLabel] = strconv.Itoa(src.SchemaID)
	}
	want := &bigquery.TableMetadata{
		Description: changelogDescription(src),
		Schema:      bqschema.ToBigQuery(src.Columns),
		TimePartitioning: &bigquery.TimePartitioning{
			Type: bigquery.DayPartitioningType, Field: catalog.ColIngestedAt,
		},
		Labels: labels,
	}
	// Clustered by ingestion time first: every read bqcdc makes of a
	// changelog is "the rows ingested after a watermark" (a view's tail, a
	// compaction's statistics and fold), and day partitions prune only whole
	// days; clustering on the same column lets BigQuery skip the blocks of
	// the day before the watermark, so a run is billed for about its new
	// rows rather than the whole day so far. The keys follow (BigQuery
	// clusters by at most four columns).
	cluster := []string{catalog.ColIngestedAt}
	for _, k := range clusterBy {
		if len(cluster) == 4 {
			break
		}
		cluster = append(cluster, k)
	}
	want.Clustering = &bigquery.Clustering{Fields: cluster}
	_, err := ensureTableCreated(ctx, bq.Dataset(dataset).Table(name), want, listed, rep)
	return err
}

// changelogDescription names the reader schema by registry id when there is
// one (stable across runs), else by where it was read.
func changelogDescription(src SourceSchema) string {
	schema := src.Origin
	if src.SchemaID != 0 {
		schema = fmt.Sprintf("registry subject %s, id %d", catalog.Subject(src.Source), src.SchemaID)
	}
	return fmt.Sprintf("bqcdc changelog of Pub/Sub topic %s: one row per change event, appended by the ingest function. Reader schema: %s.", src.Source, schema)
}

// DeadLetters creates or evolves the dead-letter table, and sets its
// partition expiration to retentionDays (0: none). Dead letters keep whole
// payloads, personal data included; an operator may want them gone after a
// while. Unlike a changelog, nothing else depends on them: replay reads
// only what is still there.
func DeadLetters(ctx context.Context, bq *bigquery.Client, dataset string, retentionDays int, rep *Report) error {
	return deadLetters(ctx, bq, dataset, retentionDays, nil, rep)
}

func deadLetters(ctx context.Context, bq *bigquery.Client, dataset string, retentionDays int, listed listing, rep *Report) error {
	expiration := time.Duration(retentionDays) * 24 * time.Hour
	want := &bigquery.TableMetadata{
		Description: "bqcdc dead letters: messages the ingest function could never turn into changelog rows, with the reason and the original bytes.",
		Schema:      bqschema.ToBigQuery(catalog.DeadLetterColumns()),
		TimePartitioning: &bigquery.TimePartitioning{
			Type: bigquery.DayPartitioningType, Field: "dead_lettered_at", Expiration: expiration,
		},
	}
	_, err := ensureTableCreated(ctx, bq.Dataset(dataset).Table(catalog.DeadLetterTable), want, listed, rep)
	return err
}

// Appends creates or evolves the append ledger (catalog.AppendsTable):
// partitioned by day of until and clustered by it, so compaction's read of
// the last hours is billed for those blocks; partitions expire after
// catalog.AppendsRetention.
func Appends(ctx context.Context, bq *bigquery.Client, dataset string, rep *Report) error {
	return appendsTable(ctx, bq, dataset, nil, rep)
}

func appendsTable(ctx context.Context, bq *bigquery.Client, dataset string, listed listing, rep *Report) error {
	want := &bigquery.TableMetadata{
		Description: "bqcdc append ledger: before an ingest instance appends changelog rows of a source it records here until when it covers that source. Compaction reads it once a run to tell the sources with rows to fold.",
		Schema:      bqschema.ToBigQuery(catalog.AppendsColumns()),
		TimePartitioning: &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: catalog.ColAppendsUntil,
			Expiration: catalog.AppendsRetention},
		Clustering: &bigquery.Clustering{Fields: []string{catalog.ColAppendsUntil}},
	}
	_, err := ensureTableCreated(ctx, bq.Dataset(dataset).Table(catalog.AppendsTable), want, listed, rep)
	return err
}

func describeExpiration(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days"
}

// CompactionReport creates or evolves the compaction report table (one
// row per flow and run, kept 90 days) and the view of each flow's latest
// run.
func CompactionReport(ctx context.Context, bq *bigquery.Client, dataset string, rep *Report) error {
	return compactionReport(ctx, bq, dataset, nil, rep)
}

func compactionReport(ctx context.Context, bq *bigquery.Client, dataset string, listed listing, rep *Report) error {
	want := &bigquery.TableMetadata{
		Description: "bqcdc compaction runs: one row per flow and run (appended through the Storage Write API). See the view " + catalog.CompactionStateView + " for each flow's latest run.",
		Schema:      bqschema.ToBigQuery(catalog.CompactionRunsColumns()),
		TimePartitioning: &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: "run_at",
			Expiration: 90 * 24 * time.Hour},
		Clustering: &bigquery.Clustering{Fields: []string{"flow"}},
	}
	if _, err := ensureTableCreated(ctx, bq.Dataset(dataset).Table(catalog.CompactionRunsTable), want, listed, rep); err != nil {
		return err
	}
	return ensureView(ctx, bq.Dataset(dataset).Table(catalog.CompactionStateView),
		catalog.CompactionStateQuery(bq.Project(), dataset), "bqcdc: each flow's latest compaction run.", rep)
}

// StatusDescription describes the status view, with what it reads.
var StatusDescription = fmt.Sprintf("bqcdc status: one row per flow: the newest change it has seen (_cdc_source_ts) and its lag, "+
	"changelog rows waiting after its compaction watermark, its last compaction and the dead letters of its source in the last day. "+
	"Each query reads each flow's changelog columns _cdc_source_ts and _cdc_ingested_at for the rows ingested in the last %d days, "+
	"the compaction runs of those days and the last day of dead letters (topic, stage, reason). "+
	"Snapshot flows (kind snapshot) read no changelog: their rows show the last run, the version it applied and the rows it skipped.", render.StatusDays)

// Status creates or updates the status view over flows (catalog.StatusView),
// and, for more flows than its query can list, the table of flows it reads
// (catalog.FlowsTable).
func Status(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, rep *Report) error {
	return StatusWith(ctx, bq, loc, flows, nil, rep)
}

// StatusWith is Status with a row for each materialized view of golds that
// compaction refreshes (their state tables must exist: Golds calls it).
func StatusWith(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, golds []*flow.BoundGold, rep *Report) error {
	sql, table, err := render.StatusQueryWith(flows, golds, loc)
	if err != nil {
		return err
	}
	if table {
		if err := flowsTable(ctx, bq, loc, flows, rep); err != nil {
			return err
		}
	}
	return ensureView(ctx, bq.Dataset(loc.DefaultDataset).Table(catalog.StatusView), sql, StatusDescription, rep)
}

// flowsTable writes catalog.FlowsTable unless its label says it lists
// these flows already (one metadata read when it does).
func flowsTable(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, rep *Report) error {
	stmts := render.FlowsTable(flows, loc)
	spec := specHash([]byte(strings.Join(stmts, "\x00")))
	t := bq.Dataset(loc.DefaultDataset).Table(catalog.FlowsTable)
	md, err := t.Metadata(ctx)
	if err == nil && md.Labels[catalog.SpecLabel] == spec {
		rep.add("table %s: unchanged", catalog.FlowsTable)
		return nil
	}
	if err != nil && !bqerror.NotFound(err) {
		return fmt.Errorf("reading table %s: %w", catalog.FlowsTable, err)
	}
	for _, stmt := range stmts {
		if err := runDDL(ctx, bq, stmt); err != nil {
			return fmt.Errorf("writing table %s (the flows the status view reads): %w", catalog.FlowsTable, err)
		}
	}
	var upd bigquery.TableMetadataToUpdate
	upd.Description = fmt.Sprintf("bqcdc: the %d deployed flows, for the status view %s (written by bqcdc apply).", len(flows), catalog.StatusView)
	upd.SetLabel(catalog.SpecLabel, spec)
	if _, err := t.Update(ctx, upd, ""); err != nil {
		return fmt.Errorf("labelling table %s: %w", catalog.FlowsTable, err)
	}
	rep.add("table %s: written (%d flows)", catalog.FlowsTable, len(flows))
	return nil
}

// ensureView creates a plain view, or updates its query and description.
func ensureView(ctx context.Context, t *bigquery.Table, query, description string, rep *Report) error {
	have, err := t.Metadata(ctx)
	if bqerror.NotFound(err) {
		if err := t.Create(ctx, &bigquery.TableMetadata{ViewQuery: query, Description: description}); err != nil {
			return fmt.Errorf("creating view %s: %w", t.TableID, err)
		}
		rep.add("view %s: created", t.TableID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading view %s: %w", t.TableID, err)
	}
	if have.ViewQuery == query && have.Description == description {
		rep.add("view %s: unchanged", t.TableID)
		return nil
	}
	if _, err := t.Update(ctx, bigquery.TableMetadataToUpdate{ViewQuery: query, Description: description}, have.ETag); err != nil {
		return fmt.Errorf("updating view %s: %w", t.TableID, err)
	}
	rep.add("view %s: updated", t.TableID)
	return nil
}

// ensureTable creates t as want, or brings an existing table's schema,
// description and labels up to date. Partitioning and clustering are only set
// at creation: changing them would rewrite the table.
func ensureTable(ctx context.Context, t *bigquery.Table, want *bigquery.TableMetadata, rep *Report) error {
	_, err := ensureTableCreated(ctx, t, want, nil, rep)
	return err
}

// ensureTableCreated is ensureTable, also reporting whether it created the
// table. The table is labelled with the hash of want (catalog.SpecLabel) in
// the request that creates it or brings it up to want. When the listing
// covers the table's dataset, a table listed with that label is as wanted
// and is not read, and a table not listed is created without a read (one
// made since the listing is read and updated instead). Otherwise it reads
// the table's metadata once.
func ensureTableCreated(ctx context.Context, t *bigquery.Table, want *bigquery.TableMetadata, listed listing, rep *Report) (created bool, err error) {
	return ensureTableThen(ctx, t, want, listed, rep, nil, nil)
}

// ensureTableThen is ensureTableCreated that calls before (unless nil) with an
// existing table's metadata before it updates the table: a change of the
// rows that the new metadata (a layout label) vouches for. read is the
// table's metadata when the caller read it already (nil: not read).
func ensureTableThen(ctx context.Context, t *bigquery.Table, want *bigquery.TableMetadata, listed listing, rep *Report, read *bigquery.TableMetadata, before func(have *bigquery.TableMetadata) error) (created bool, err error) {
	if read != nil {
		listed = nil // the metadata is newer than any listing
	}
	if spec := tableSpec(want); spec != "" {
		want.Labels = maps.Clone(want.Labels)
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		want.Labels[catalog.SpecLabel] = spec
		if lt, known, exists := listed.lookup(t.DatasetID, t.TableID); known {
			switch {
			case exists && !lt.View && lt.Labels[catalog.SpecLabel] == spec:
				rep.add("table %s: unchanged", t.TableID)
				return false, nil
			case !exists:
				err := t.Create(ctx, want)
				if err == nil {
					rep.add("table %s: created", t.TableID)
					return true, nil
				}
				if !bqerror.AlreadyExists(err) {
					return false, fmt.Errorf("creating table %s: %w", t.TableID, err)
				}
				// Made since the listing: read and update it below.
			}
		}
	}
	have, err := read, error(nil)
	if have == nil {
		have, err = t.Metadata(ctx)
	}
	if bqerror.NotFound(err) {
		if err := t.Create(ctx, want); err != nil {
			return false, fmt.Errorf("creating table %s: %w", t.TableID, err)
		}
		rep.add("table %s: created", t.TableID)
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading table %s: %w", t.TableID, err)
	}
	if before != nil {
		if err := before(have); err != nil {
			return false, err
		}
	}
	return false, updateTable(ctx, t, have, want, rep)
}

// updateTable brings table t (have: its metadata) up to want.
func updateTable(ctx context.Context, t *bigquery.Table, have, want *bigquery.TableMetadata, rep *Report) error {
	merged, added, err := evolve.Merge(bqschema.FromBigQuery(have.Schema), bqschema.FromBigQuery(want.Schema))
	if err != nil {
		return fmt.Errorf("table %s: %w", t.TableID, err)
	}
	var upd bigquery.TableMetadataToUpdate
	var changes []string
	if len(added) > 0 {
		upd.Schema = bqschema.ToBigQuery(merged)
		changes = append(changes, "added columns "+strings.Join(added, ", "))
	}
	if have.Description != want.Description {
		upd.Description = want.Description
		changes = append(changes, "description")
	}
	if wp, hp := want.TimePartitioning, have.TimePartitioning; wp != nil && hp != nil && wp.Expiration != hp.Expiration {
		// The partition expiration is the one mutable part of partitioning
		// bqcdc sets (the dead letters' retention); the rest stays.
		tp := *hp
		tp.Expiration = wp.Expiration
		upd.TimePartitioning = &tp
		changes = append(changes, "partition expiration "+describeExpiration(wp.Expiration))
	}
	if want.Clustering != nil && (have.Clustering == nil || !slices.Equal(have.Clustering.Fields, want.Clustering.Fields)) {
		// BigQuery applies a new clustering to data written from then on.
		upd.Clustering = want.Clustering
		changes = append(changes, "clustering "+strings.Join(want.Clustering.Fields, ", "))
	}
	labelled := false
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			labelled = true
			if k != catalog.SpecLabel {
				changes = append(changes, "label "+k+"="+v)
			}
		}
	}
	if labelled {
		// BigQuery merges a patch's labels, the emulator replaces them
		// all: repeat the others (compaction's, on a state table) and
		// want's unchanged ones (left out, the emulator dropped them: a
		// state's layout label every other apply).
		keepLabels(&upd, have.Labels)
		for k, v := range want.Labels {
			upd.SetLabel(k, v)
		}
		if len(changes) == 0 {
			changes = append(changes, "labelled as applied")
		}
	}
	if len(changes) == 0 {
		rep.add("table %s: unchanged", t.TableID)
		return nil
	}
	if _, err := t.Update(ctx, upd, have.ETag); err != nil {
		return fmt.Errorf("updating table %s (%s): %w", t.TableID, strings.Join(changes, "; "), err)
	}
	rep.add("table %s: updated (%s)", t.TableID, strings.Join(changes, "; "))
	return nil
}

// PubSubDeadLetters creates the table the dead-letter topics' BigQuery
// subscriptions write. Terraform owns it in production; the local stack
// uses this.
func PubSubDeadLetters(ctx context.Context, bq *bigquery.Client, dataset string, rep *Report) error {
	want := &bigquery.TableMetadata{
		Description:      "Pub/Sub dead letters of every bqcdc source (raw Avro payload plus delivery metadata), for inspection and replay.",
		Schema:           bqschema.ToBigQuery(catalog.PubSubDeadLetterColumns()),
		TimePartitioning: &bigquery.TimePartitioning{Type: bigquery.DayPartitioningType, Field: "publish_time"},
		Clustering:       &bigquery.Clustering{Fields: []string{"subscription_name"}},
	}
	return ensureTable(ctx, bq.Dataset(dataset).Table(catalog.PubSubDeadLetterTable), want, rep)
}
