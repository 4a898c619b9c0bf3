// Package compact is the Cloud Run function Cloud Scheduler calls (with an
// OIDC token; Cloud Run checks it) to compact every flow, or the flows named
// in the request: ?flow=a&flow=b, or a JSON body {"flows": ["a", "b"]}.
//
// It is a thin shell over internal/compact: configuration in (config.Config,
// from the environment when deployed, built directly by the local stack),
// one constructor, an HTTP handler. It answers 200 with a per-flow JSON
// report, or 500 with the same report when any flow failed, so the
// scheduler records the failure (and may retry: compaction is idempotent),
// or 503 with the reason when BigQuery could not be reached at all for
// the connect timeout (BQCDC_CONNECT_TIMEOUT, 30 s by default).
package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/logging"
	"github.com/bqcdc/bqcdc/internal/metrics"
)

// EntryPoint is the name the function is registered and deployed under.
const EntryPoint = "Compact"

// Register registers the entry point with the Functions Framework. The
// function configures itself from the environment on its first request,
// with builtin as its flows unless BQCDC_FLOWS_DIR names others.
func Register(builtin fs.FS) {
	functions.HTTP(EntryPoint, fromEnv(builtin))
}

// fromEnv returns a handler that builds the function from the environment
// on first use.
func fromEnv(builtin fs.FS) http.HandlerFunc {
	fn := config.NewLazy(func(ctx context.Context, cfg config.Config) (*Function, error) {
		d, refused := flow.LoadAll(cfg.FlowsDir, builtin)
		flows := d.Flows
		if len(flows) == 0 && len(d.Contested) == 0 {
			return nil, fmt.Errorf("no flow loads: %w", errors.Join(refused...))
		}
		log := logging.New(os.Stdout)
		mp, err := metrics.Start(ctx, metrics.Config{Exporter: cfg.MetricsExporter, Interval: cfg.MetricsInterval,
			Project: cfg.BigQuery.Project, Service: "bqcdc-compact", Log: log})
		if err != nil {
			return nil, fmt.Errorf("starting metrics: %w", err)
		}
		return New(ctx, cfg, Options{Flows: flows, Golds: d.Golds, Contested: d.Contested, Refused: refused, Log: log, Metrics: mp})
	})
	return func(w http.ResponseWriter, r *http.Request) {
		f, err := fn.Get(r.Context())
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, Response{Error: "configuring compact: " + err.Error()})
			return
		}
		f.ServeHTTP(w, r)
	}
}

// Options are what New needs besides the configuration.
type Options struct {
	Flows []*flow.Flow // the flows deployed
	// Golds are the materialized views deployed: a flow's run refreshes
	// the state of those over it (compact.Options.Golds).
	Golds []*flow.Gold
	// Refused are the deployed flows that did not load (file:line:column):
	// every run answers 500 naming them, after compacting the others.
	Refused []error
	// Contested are refused flows that each run keeps if the deployment
	// says they own their target (apply.KeepDeployed, one metadata read
	// each): a new flow claiming a running flow's target does not stop that
	// flow's compaction.
	Contested []*flow.Flow
	// Log receives one line per flow and run; nil means JSON on stdout.
	Log *slog.Logger
	// Metrics receives each flow's run; nil measures nothing. The
	// function flushes it at the end of every run: between scheduled
	// runs its instance may get no CPU to export on its own.
	Metrics *metrics.Provider
	// LedgerSettle overrides compact.Options.LedgerSettle (0: its
	// default): for tests on the local stack, whose ledger is minutes old.
	LedgerSettle time.Duration
}

// Function is the compact function of one instance.
type Function struct {
	compactor *compact.Compactor
	bq        *bigquery.Client
	loc       catalog.Location
	flows     []*flow.Flow
	contested []*flow.Flow // Options.Contested
	refused   []error
	metrics   *metrics.Provider
	log       *slog.Logger
}

// New creates the function's client and compactor.
func New(ctx context.Context, cfg config.Config, o Options) (*Function, error) {
	if o.Log == nil {
		o.Log = logging.New(os.Stdout)
	}
	bq, err := clients.NewBigQuery(context.WithoutCancel(ctx), cfg.BigQuery)
	if err != nil {
		return nil, err
	}
	loc := catalog.Location{Project: cfg.BigQuery.Project, DefaultDataset: cfg.Dataset}
	o.Log.Info("compact configured", "config", cfg.Redacted(), "flows", len(o.Flows))
	for _, err := range o.Refused {
		o.Log.Error("flow refused: it is not compacted", "event", "flow_refused", "error", err.Error())
	}
	opts := compact.Configured(cfg)
	if len(o.Refused) > 0 && opts.ChangelogRetention > 0 {
		// A flow that does not parse names no source, and it will need the
		// changelog days it has not folded once it is fixed: keep them all.
		o.Log.Warn("changelog retention suspended while flows are refused", "event", "retention_suspended")
		opts.ChangelogRetention = 0
	}
	// Reports are appended through the Storage Write API: no DML on the
	// shared report table.
	mw, err := clients.NewWriter(context.WithoutCancel(ctx), cfg.BigQuery)
	if err != nil {
		return nil, err
	}
	if cfg.AppendLedger {
		l, err := clients.NewTableLister(context.WithoutCancel(ctx), cfg.BigQuery)
		if err != nil {
			return nil, err
		}
		opts.Lister = l // nil unless the ledger is on (a nil *TableLister is not)
	}
	// LedgerSettle is the local stack's alone (its ledger is minutes old,
	// not a day): no configuration sets it.
	opts.LedgerSettle = o.LedgerSettle
	opts.Golds, opts.Log, opts.Metrics = o.Golds, o.Log, o.Metrics.Recorder()
	opts.Reports = bqwrite.NewWriter(bq, mw, cfg.BigQuery.Project, cfg.Dataset)
	return &Function{flows: o.Flows, contested: o.Contested, refused: o.Refused, bq: bq, loc: loc, metrics: o.Metrics, log: o.Log,
		compactor: compact.New(bq, loc, opts)}, nil
}

// keepDeployed is the run's flows and refusals: of the contested flows,
// those the deployment names as their target's owner join the flows (a
// metadata read each, every run, so a label apply writes later counts).
func (f *Function) keepDeployed(ctx context.Context) ([]*flow.Flow, []error, error) {
	if len(f.contested) == 0 {
		return f.flows, f.refused, nil
	}
	flows, refused, kept, err := apply.KeepDeployed(ctx, f.bq, f.loc, flow.Declarations{Flows: f.flows, Contested: f.contested}, f.refused)
	for _, k := range kept {
		f.log.Info("contested flow kept: its deployed view names it", "event", "flow_kept", "flow", k.Name, "target", k.Target.String())
	}
	return flows, refused, err
}

// Response is the function's answer.
type Response struct {
	Reports []compact.Report `json:"reports"`
	Error   string           `json:"error,omitempty"`
}

// ServeHTTP runs one compaction: of every flow, of the flows named
// (?flow=a&flow=b or {"flows": [...]}), or of one shard of the sources
// (?shard=i&shards=n, one Cloud Scheduler job per shard).
func (f *Function) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	names, shard, shards, err := parseRequest(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Response{Error: err.Error()})
		return
	}
	// Bind on every run: ingest adds columns to a changelog when its source
	// schema gains fields, and the run must fold them (and show them in the
	// view). With the append ledger only the flows that may have rows to
	// fold are bound (one metadata read per source); the rest cost a share
	// of a listing.
	flows, refused, err := f.keepDeployed(r.Context())
	var sel compact.Selection
	var unbindable error
	if err == nil {
		sel, unbindable, err = f.compactor.Prepare(r.Context(), flows, names, shard, shards)
	}
	if bqerror.IsUnreachable(err) {
		writeJSON(w, http.StatusServiceUnavailable, Response{Error: err.Error()})
		return
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Response{Error: err.Error()})
		return
	}
	if len(sel.Flows) == 0 && len(sel.Idle) == 0 && unbindable != nil {
		status := http.StatusInternalServerError
		if bqerror.IsUnreachable(unbindable) {
			status = http.StatusServiceUnavailable // retry later: nothing is wrong with the flows
		}
		writeJSON(w, status, Response{Error: unbindable.Error()})
		return
	}
	reports, err := f.compactor.Compact(r.Context(), sel)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Response{Error: err.Error()})
		return
	}
	if err := f.metrics.Flush(r.Context()); err != nil {
		f.log.Warn("metrics not exported", "event", "metrics_flush_failed", "error", err.Error())
	}
	status, unreachable := http.StatusOK, ""
	for _, rep := range reports {
		if rep.Outcome == compact.Failed {
			status = http.StatusInternalServerError
		}
		if rep.Unreachable && unreachable == "" {
			unreachable = rep.Error
		}
	}
	resp := Response{Reports: reports}
	if unreachable != "" {
		// BigQuery did not answer at all: 503, so the scheduler retries
		// later, with the reason (the connect timeout bounds the wait,
		// well inside the function's deadline).
		resp.Error = unreachable
		writeJSON(w, http.StatusServiceUnavailable, resp)
		return
	}
	if refused := errors.Join(append(refused, unbindable)...); refused != nil {
		// Flows that do not load or bind: the others were compacted.
		status, resp.Error = http.StatusInternalServerError, "flows refused (the others ran): "+refused.Error()
	}
	writeJSON(w, status, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
