package compact

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// task is one flow of a run, with what the run read of it up front.
type task struct {
	b         *flow.Bound
	p         *plan.Plan              // b's plan
	changelog *bigquery.TableMetadata // what the flow reads: its changelog or snapshot table; nil: not readable (the flow fails)
	state     *bigquery.TableMetadata // nil: the state table does not exist yet
	labels    labels
	err       error // reading the metadata failed
}

// kind is what one kind of flow does in a run. Compactor.flow is the one
// state machine every kind goes through:
//
//	ensure state -> idle? -> read -> fold (the commit point) -> after -> view -> labels
//
// A kind is created per flow and run (machines, by the flow plan's
// Machine) and keeps what its steps pass on: plan.Stream (change-stream
// flows: stream.go) and plan.Snapshot (snapshot flows: snapshot.go). A new
// machine is a new file and a row in machines.
type kind interface {
	// read reads what the run would do (statistics, markers) and reports
	// whether there is anything to fold; when not, it sets the outcome.
	read(ctx context.Context) (bool, error)
	// fold writes what the run folds in one statement: the commit point.
	fold(ctx context.Context) error
	// after runs the steps after the commit point (each calling r.step).
	after(ctx context.Context) error
	// view brings the flow's view up to date (metadata calls only).
	view(ctx context.Context) error
	// next returns the labels the run leaves on the state table, and
	// false to leave the labels as they are.
	next() (labels, bool)
}

// run is one flow's run: what every kind's steps share.
type run struct {
	c    *Compactor
	t    *task
	now  time.Time
	rep  *Report
	acct *account
	cols string // the state's columns, as the view memo keys them
}

// machines makes the kind of a run by the flow plan's Machine.
var machines = map[plan.Machine]func(*run) kind{
	plan.Stream:   func(r *run) kind { return &streamRun{run: r} },
	plan.Snapshot: func(r *run) kind { return &snapshotRun{run: r} },
}

// markerRow reads the state's marker with the statement plan renders: its
// one row, or nil when the state holds no marker. what names it in errors.
func (r *run) markerRow(ctx context.Context, plan func() (string, error), what string) (map[string]bigquery.Value, error) {
	sql, err := plan()
	if err != nil {
		return nil, err
	}
	res, err := r.c.query(ctx, StepMarker, sql, r.acct)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if len(res.Rows) != 1 {
		return nil, nil
	}
	return res.Rows[0], nil
}

// flow compacts one flow; acct counts its query jobs.
func (c *Compactor) flow(ctx context.Context, t *task, now time.Time, rep *Report, acct *account) error {
	if t.err != nil {
		return t.err
	}
	r := &run{c: c, t: t, now: now, rep: rep, acct: acct}
	k := machines[t.p.Machine()](r)
	if err := r.ensureState(ctx); err != nil {
		return err
	}
	rep.WatermarkBefore, rep.WatermarkAfter = t.labels.watermark, t.labels.watermark
	if c.idle(t.labels, signature(t.changelog), now) {
		rep.Outcome = Idle
		// The view still follows the source's columns (metadata only).
		return k.view(ctx)
	}
	todo, err := k.read(ctx)
	if err != nil {
		return err
	}
	if todo {
		if err := k.fold(ctx); err != nil {
			return err
		}
		rep.Outcome = Compacted
		if err := r.step(StepFold); err != nil {
			return err
		}
	}
	if err := k.after(ctx); err != nil {
		return err
	}
	// The view is brought up to date even with nothing folded, so columns
	// ingest added appear in it without waiting for changes.
	if err := k.view(ctx); err != nil {
		return err
	}
	if todo {
		if err := r.step(StepView); err != nil {
			return err
		}
	}
	if l, ok := k.next(); ok {
		return r.setLabels(ctx, l)
	}
	return nil
}

// ensureState makes sure the flow's state table (and change table) exists
// with the flow's columns and layout: the state follows its source, so
// columns ingest added since the last run are added before anything is
// folded into them. It reads no metadata: the run read the state's up
// front.
func (r *run) ensureState(ctx context.Context) error {
	want := r.t.p.StateColumns()
	r.cols = fmt.Sprint(want)
	// A state partitioned by other buckets than the flow's (turned on, off
	// or changed) is moved first: the run's buckets are the flow's.
	if st := r.t.state; st != nil && r.t.labels.layout && r.t.p.Bucketed(st) {
		have := bqschema.FromBigQuery(st.Schema)
		missing := false
		for _, w := range want {
			if _, ok := have.Lookup(w.Name); !ok {
				missing = true
				break
			}
		}
		if !missing {
			return nil
		}
	}
	if r.c.opts.DryRun != nil {
		// A dry run makes nothing: the statements are priced against the
		// tables as they are (a missing one fails its dry run, which the
		// plan shows).
		r.acct.plan = append(r.acct.plan, Statement{Step: "state tables", Error: "not up to date: bqcdc apply (or a run) creates or evolves them first"})
		return nil
	}
	if err := r.c.objs.State(ctx, r.t.b); err != nil {
		return fmt.Errorf("bringing the state table up to date: %w", err)
	}
	r.t.labels.layout = true
	return nil
}

// setLabels records the run on the state table (a metadata update).
func (r *run) setLabels(ctx context.Context, l labels) error {
	b := r.t.b
	l.layout = true
	if n := b.LatenessHorizonDays; n > 0 {
		l.horizon = strconv.Itoa(n)
	}
	if r.c.opts.DryRun != nil {
		return nil
	}
	if err := r.c.wh.SetLabels(ctx, r.c.loc.Dataset(b.Flow), catalog.StateName(b.Flow), l.values()); err != nil {
		return fmt.Errorf("labelling the state table (the next run checks the flow with a query): %w", err)
	}
	return nil
}

// step calls Options.AfterStep after a step of the run.
func (r *run) step(step string) error {
	if r.c.opts.AfterStep == nil {
		return nil
	}
	if err := r.c.opts.AfterStep(r.t.b.Name, step); err != nil {
		return fmt.Errorf("stopped after step %s: %w", step, err)
	}
	return nil
}

// viewOnce calls put unless this compactor already brought the flow's view
// to the same columns and bound (memo), so a run with nothing to fold reads
// the view's metadata only when something changed.
func (r *run) viewOnce(memo string, put func() error) error {
	if r.c.opts.DryRun != nil {
		return nil
	}
	key := r.cols + "@" + memo
	if seen, ok := r.c.views.Load(r.t.b.Name); ok && seen == key {
		return nil
	}
	if err := put(); err != nil {
		return err
	}
	r.c.views.Store(r.t.b.Name, key)
	return nil
}

// generation is the generation a run started at now writes: after every
// generation the state holds, whatever the clock does.
func generation(now, newest time.Time) time.Time {
	if !now.After(newest) {
		return newest.Add(time.Microsecond)
	}
	return now
}
