package apply

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/sql/render"
	"google.golang.org/api/iterator"
)

// State creates or evolves a flow's state table.
func State(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, rep *Report) error {
	_, err := state(ctx, bq, plan.For(b, loc), nil, Options{}, rep)
	return err
}

// state is State, also reporting whether it created the state table. A
// flow with a change feed gets its change table first, and the state table
// is labelled with the layout (catalog.StateLayoutLabel) only once both
// exist, so compaction, which reads that label with the state's metadata,
// knows the change table is there without reading it.
//
// opts' AfterMoveStep and Notices serve a move to another partitioning
// (relayout); Notices also gets a new or shorter lateness horizon's notice
// (horizonNotice).
func state(ctx context.Context, bq *bigquery.Client, p *plan.Plan, listed listing, opts Options, rep *Report) (created bool, err error) {
	b, loc := p.Flow, p.Loc
	if ct := p.ChangeTable(); ct != nil {
		if _, err := ensureTableCreated(ctx, bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.ChangesName(b.Flow)), ct, listed, rep); err != nil {
			return false, err
		}
	}
	var read *bigquery.TableMetadata // the state's metadata, when relayout read it
	if p.Machine() == plan.Stream {
		var err error
		if read, err = relayout(ctx, bq, p, listed, opts, rep); err != nil {
			return false, err
		}
	}
	want := p.StateTable()
	var migrations []func(have *bigquery.TableMetadata) error
	if sql := render.KeylessTruncates(b, loc); sql != "" {
		// An older layout's truncate rows may carry a key: cleared before
		// the state is labelled with the layout that says they carry none
		// (a crash in between clears them again).
		migrations = append(migrations, func(have *bigquery.TableMetadata) error {
			if have.Labels[catalog.StateLayoutLabel] == p.Layout {
				return nil
			}
			if err := runDDL(ctx, bq, sql); err != nil {
				return fmt.Errorf("state of flow %s: clearing the keys of its truncate rows (layout %s): %w", b.Name, p.Layout, err)
			}
			rep.add("table %s: truncate rows keyless (layout %s)", catalog.StateName(b.Flow), p.Layout)
			return nil
		})
	}
	if render.HistoryKept(b) {
		// A state folded before it kept a history (sql/render/history.go):
		// the changelog copied into it once, before the label says it is
		// whole (a crash in between copies nothing more: the marker).
		migrations = append(migrations, func(have *bigquery.TableMetadata) error {
			if have.Labels[catalog.LabelHistory] == "1" {
				return nil
			}
			sql, err := render.HistoryBackfill(b, loc)
			if err != nil {
				return err
			}
			rep.add("table %s: filling its history from %s (one read of the changelog, once)", catalog.StateName(b.Flow), catalog.TableName(b.Source.Name))
			if err := runDDL(ctx, bq, sql); err != nil {
				return fmt.Errorf("state of flow %s: copying the changelog into its history: %w", b.Name, err)
			}
			return nil
		})
	}
	if b.LatenessHorizonDays > 0 {
		migrations = append(migrations, func(have *bigquery.TableMetadata) error {
			if s := horizonNotice(b, have.Labels[catalog.LabelLatenessHorizon]); s != "" {
				rep.add("%s", s)
				if opts.Notices != nil {
					fmt.Fprintln(opts.Notices, s)
				}
			}
			return nil
		})
	}
	migrate := func(have *bigquery.TableMetadata) error {
		for _, m := range migrations {
			if err := m(have); err != nil {
				return err
			}
		}
		return nil
	}
	return ensureTableThen(ctx, bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow)), want, listed, rep, read, migrate)
}

// Watermark reads a flow's current watermark (render.Epoch if never compacted).
func Watermark(ctx context.Context, bq *bigquery.Client, loc catalog.Location, f *flow.Flow) (time.Time, error) {
	sql := fmt.Sprintf("SELECT MAX(%s) AS w FROM %s WHERE %s = 'W'", catalog.ColStateWatermark, loc.StateTable(f), catalog.ColStateOp)
	it, err := bq.Query(sql).Read(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the watermark of flow %s: %w", f.Name, err)
	}
	var row []bigquery.Value
	if err := it.Next(&row); err != nil && err != iterator.Done {
		return time.Time{}, fmt.Errorf("reading the watermark of flow %s: %w", f.Name, err)
	}
	if len(row) == 1 && row[0] != nil {
		return row[0].(time.Time).UTC(), nil
	}
	return render.Epoch, nil
}

// View creates or updates a flow's view in place (tables.update is atomic:
// a query never sees the view missing). hint must be a committed watermark.
// Table functions apply made that read a pruning bound are made again with
// hint once theirs is FunctionsRefresh behind: jobs is the query jobs that
// took (one DDL script, or none), for compaction's accounting.
func View(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, hint time.Time, rep *Report) (jobs int, err error) {
	t, have, err := viewMetadata(ctx, bq, loc, b)
	if err != nil {
		return 0, err
	}
	_, jobs, err = view(ctx, bq, t, have, loc, b, hint, rep)
	return jobs, err
}

// viewMetadata returns a flow's view and its metadata (nil if it does not
// exist).
func viewMetadata(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound) (*bigquery.Table, *bigquery.TableMetadata, error) {
	t := bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.ViewName(b.Flow))
	have, err := t.Metadata(ctx)
	if bqerror.NotFound(err) {
		return t, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading view %s: %w", b.Target, err)
	}
	return t, have, nil
}

// view brings view t (have: its metadata, nil if it does not exist) to the
// flow's SQL rendered with hint, and returns its metadata as it now is (so
// Functions can label it without reading it again). With bq, it also
// refreshes the table functions' bound (refreshFunctions: jobs is 1 when
// it did); without, it runs no job (FollowChangelog: ingest has no job
// permissions).
func view(ctx context.Context, bq *bigquery.Client, t *bigquery.Table, have *bigquery.TableMetadata, loc catalog.Location, b *flow.Bound, hint time.Time, rep *Report) (*bigquery.TableMetadata, int, error) {
	var labels map[string]string
	if have != nil {
		labels = have.Labels
	}
	p := plan.For(b, loc)
	w, err := wantView(p, hint, labels)
	if err != nil {
		return nil, 0, err
	}
	md, err := putView(ctx, t, have, b, w, rep)
	if err != nil {
		return nil, 0, err
	}
	var extra map[string]string
	if bq != nil {
		if extra, err = refreshFunctions(ctx, bq, p, md.Labels, hint, rep); err != nil {
			return nil, 0, err
		}
	}
	jobs := 0
	if extra != nil {
		jobs = 1
	}
	md, err = finishView(ctx, t, b, md, w, extra)
	return md, jobs, err
}

// wantView renders what apply wants of a flow's view, with the bound its
// plan says: hint (a committed watermark) or the version key of labels
// (the view's as it is; versions applied only grow, so it stays a valid
// bound).
func wantView(p *plan.Plan, hint time.Time, labels map[string]string) (wantedView, error) {
	v, err := p.View(hint, labels)
	if err != nil {
		return wantedView{}, err
	}
	return newWantedView(p.Flow.Name, v.SQL, v.Description, v.Label, v.Value, v.Columns), nil
}

// SnapshotView creates or updates a snapshot flow's view with the constant
// lower bound key, a version key already applied (versions applied only
// grow, so it stays a valid bound); "" keeps the view's bound. A key that
// is not a valid label value (a STRING version with upper case or spaces,
// say) gives no bound: the view then reads the table with the applied
// version as its only filter.
func SnapshotView(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, key string, rep *Report) error {
	t, have, err := viewMetadata(ctx, bq, loc, b)
	if err != nil {
		return err
	}
	if key == "" && have != nil {
		key = have.Labels[catalog.ViewVersionLabel]
	}
	w, err := wantView(plan.For(b, loc), render.Epoch, map[string]string{catalog.ViewVersionLabel: key})
	if err != nil {
		return err
	}
	md, err := putView(ctx, t, have, b, w, rep)
	if err == nil {
		_, err = finishView(ctx, t, b, md, w, nil)
	}
	return err
}

// putView brings view t (have: its metadata, nil if it does not exist) to
// w's query, description and bound label, and returns its metadata as it
// now is. It leaves the view without its spec label (catalog.SpecLabel)
// whenever it changes it: finishView writes the label last, with the
// column descriptions, so a view is labelled as applied only once it is.
func putView(ctx context.Context, t *bigquery.Table, have *bigquery.TableMetadata, b *flow.Bound, w wantedView, rep *Report) (*bigquery.TableMetadata, error) {
	var err error
	switch {
	case have == nil:
		labels := map[string]string{}
		if w.value != "" {
			labels[w.label] = w.value
		}
		if err := t.Create(ctx, &bigquery.TableMetadata{ViewQuery: w.sql, Description: w.desc, Labels: labels}); err != nil {
			return nil, fmt.Errorf("creating view %s of flow %s: %w", b.Target, b.Name, err)
		}
		rep.add("view %s: created", b.Target)
		// Create does not return the schema BigQuery derived for the view.
		if have, err = t.Metadata(ctx); err != nil {
			return nil, fmt.Errorf("reading view %s: %w", b.Target, err)
		}
	case have.Type != bigquery.ViewTable:
		return nil, fmt.Errorf("%s exists and is not a view (it is a %s): flow %s (%s) needs that name for its view; rename the target or drop the table", b.Target, have.Type, b.Name, b.Pos)
	case have.ViewQuery != w.sql || have.Description != w.desc || have.Labels[w.label] != w.value:
		upd := bigquery.TableMetadataToUpdate{ViewQuery: w.sql, Description: w.desc}
		for k, v := range have.Labels {
			if k != w.label && k != catalog.SpecLabel {
				upd.SetLabel(k, v) // BigQuery merges, the emulator replaces: see keepLabels
			}
		}
		if _, had := have.Labels[catalog.SpecLabel]; had {
			upd.DeleteLabel(catalog.SpecLabel)
		}
		if w.value != "" {
			upd.SetLabel(w.label, w.value)
		} else if _, had := have.Labels[w.label]; had {
			upd.DeleteLabel(w.label)
		}
		if have, err = t.Update(ctx, upd, have.ETag); err != nil {
			return nil, fmt.Errorf("updating view %s of flow %s: %w", b.Target, b.Name, err)
		}
		rep.add("view %s: updated", b.Target)
	default:
		rep.add("view %s: unchanged", b.Target)
	}
	return have, nil
}

// finishView writes what is left of w on view t (md: its metadata as it
// is), in one metadata update and only if something differs: the column
// descriptions the view's query cannot carry, the spec label, and the
// labels in extra (the table functions' hash). It returns the view's
// metadata as it then is.
func finishView(ctx context.Context, t *bigquery.Table, b *flow.Bound, md *bigquery.TableMetadata, w wantedView, extra map[string]string) (*bigquery.TableMetadata, error) {
	schema, described := describe(md.Schema, w.columns)
	extra = maps.Clone(extra)
	if extra == nil {
		extra = map[string]string{}
	}
	extra[catalog.FlowLabel] = w.owner // the flow that owns the target (claims: apply.Contested)
	if !described && md.Labels[catalog.SpecLabel] == w.spec && hasLabels(md.Labels, extra) {
		return md, nil
	}
	var upd bigquery.TableMetadataToUpdate
	if described {
		upd.Schema = schema
	}
	keepLabels(&upd, md.Labels)
	for k, v := range extra {
		upd.SetLabel(k, v)
	}
	upd.SetLabel(catalog.SpecLabel, w.spec)
	md, err := t.Update(ctx, upd, md.ETag)
	if err != nil {
		return nil, fmt.Errorf("describing the columns of view %s: %w", b.Target, err)
	}
	return md, nil
}

// FollowChangelog brings a flow's state table and view up to a changelog
// that gained columns, without running a query: the view is rendered again
// with the pruning bound it carries in catalog.ViewHintLabel. A view without the label
// (or without a view) is left for the next compaction run or apply, which
// read the watermark. It needs only table metadata permissions, which the
// ingest function has.
func FollowChangelog(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, rep *Report) error {
	if err := State(ctx, bq, loc, b, rep); err != nil {
		return err
	}
	t := bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.ViewName(b.Flow))
	have, err := t.Metadata(ctx)
	if bqerror.NotFound(err) {
		rep.add("view %s: missing, left to apply", b.Target)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading view %s: %w", b.Target, err)
	}
	hint, ok := catalog.LabelMicros(have.Labels[catalog.ViewHintLabel])
	if !ok {
		rep.add("view %s: no %s label, left to the next compaction", b.Target, catalog.ViewHintLabel)
		return nil
	}
	_, _, err = view(ctx, nil, t, have, loc, b, hint, rep)
	return err
}

// keepLabels repeats a table's labels in an update: BigQuery merges the
// labels of a patch, the emulator replaces them all, and labels are set by
// different steps (a view's catalog.ViewHintLabel and
// catalog.ViewFunctionsLabel; a state table's by apply and by compaction).
func keepLabels(upd *bigquery.TableMetadataToUpdate, labels map[string]string) {
	for k, v := range labels {
		upd.SetLabel(k, v)
	}
}

// describe returns schema with the descriptions of want (by lower-case
// column name) and whether any differed.
func describe(schema bigquery.Schema, want map[string]string) (bigquery.Schema, bool) {
	changed := false
	for _, f := range schema {
		if d, ok := want[strings.ToLower(f.Name)]; ok && f.Description != d {
			f.Description = d
			changed = true
		}
	}
	return schema, changed
}

// FlowObjects applies a flow's state table, view and table functions (and
// the flow's dataset, when it is not the default one). Of opts it heeds
// ReadWatermarks and SkipTableFunctions.
func FlowObjects(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, opts Options, rep *Report) error {
	if ds := loc.Dataset(b.Flow); ds != loc.DefaultDataset {
		if err := Dataset(ctx, bq, ds, rep); err != nil {
			return err
		}
	}
	return flowObjects(ctx, bq, loc, b, opts, nil, rep)
}

// flowObjects applies a flow's state table, view and table functions with
// no request at all when the listing says each is as wanted, one metadata
// read each when nothing changed and there is no listing, and no query
// unless it must.
//
// The view is rendered with a pruning bound that must be a committed
// watermark (see View). A state table created here has none yet, so the
// bound is the epoch. Otherwise the view's catalog.ViewHintLabel is reused: apply and
// compaction write it only with a watermark committed at the time, and a
// state table's watermark never goes back while the table lives, so the
// label is still a valid bound; compaction advances it. Reading the
// watermark (a query job per flow, the old way) is left for a view without
// the label, or opts.ReadWatermarks (for a state table whose rows were
// deleted by hand, whose watermark did go back).
//
// A new or changed view costs its create or update, a read (BigQuery
// derives its schema), the table functions' DDL as one script job, and one
// update that describes its columns and labels it with both hashes.
func flowObjects(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, opts Options, listed listing, rep *Report) error {
	p := plan.For(b, loc)
	created, err := state(ctx, bq, p, listed, opts, rep)
	if err != nil {
		return err
	}
	ds, name := loc.Dataset(b.Flow), catalog.ViewName(b.Flow)
	t := bq.Dataset(ds).Table(name)
	lt, known, exists := listed.lookup(ds, name)
	var have *bigquery.TableMetadata
	labels := lt.Labels
	if !known {
		if _, have, err = viewMetadata(ctx, bq, loc, b); err != nil {
			return err
		}
		if have != nil {
			labels, exists = have.Labels, true
		}
	}
	hint := render.Epoch
	if !created && p.Bound() == plan.BoundWatermark {
		labelled, ok := hintOf(labels)
		if ok && exists && !opts.ReadWatermarks {
			hint = labelled
		} else if hint, err = Watermark(ctx, bq, loc, b.Flow); err != nil {
			return err
		}
	}
	w, err := wantView(p, hint, labels)
	if err != nil {
		return err
	}
	var script functionScript
	if !opts.SkipTableFunctions {
		if script, err = keptFunctionScript(p, labels, hint); err != nil {
			return err
		}
	}
	extra := script.labels
	if known && exists && lt.View && labels[catalog.SpecLabel] == w.spec && hasLabels(labels, extra) {
		rep.add("view %s: unchanged", b.Target)
		script.report(loc, b, rep, "unchanged")
		return nil
	}
	if known && exists {
		if _, have, err = viewMetadata(ctx, bq, loc, b); err != nil {
			return err
		}
	}
	md, err := putView(ctx, t, have, b, w, rep)
	if err != nil {
		return err
	}
	if err := script.apply(ctx, bq, md.Labels, loc, b, rep); err != nil {
		return err
	}
	_, err = finishView(ctx, t, b, md, w, extra)
	return err
}

// hasLabels reports whether labels hold every label of want.
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// hintOf reads the pruning bound a view was rendered with from its labels.
func hintOf(labels map[string]string) (time.Time, bool) {
	return catalog.LabelMicros(labels[catalog.ViewHintLabel])
}

// horizonNotice is what apply says of an existing state labelled with
// lateness horizon was (catalog.LabelLatenessHorizon, "" for none) whose
// flow is b: "" when b has no horizon or was is as short or shorter, else
// what the next maintenance will drop for good. A state made new says
// nothing (it holds no event yet): state calls it for existing ones only.
func horizonNotice(b *flow.Bound, was string) string {
	n := b.LatenessHorizonDays
	if n <= 0 {
		return ""
	}
	days := func(n int) string {
		if n == 1 {
			return "1 day"
		}
		return strconv.Itoa(n) + " days"
	}
	before := "none"
	if w, err := strconv.Atoi(was); err == nil && w > 0 {
		if w <= n {
			return ""
		}
		before = days(w)
	}
	return fmt.Sprintf("table %s: lateness horizon %s (was %s): from its next maintenance on, events ingested more than %s before its watermark that no view needs are dropped from the state for good (%s); to keep them, remove the property and apply before then (a state dropped and applied again is rebuilt from the changelog, as far as its retention reaches)",
		catalog.StateName(b.Flow), days(n), before, days(n), flow.LatenessHorizonProperty)
}
