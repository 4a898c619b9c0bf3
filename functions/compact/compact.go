// Package compact is the Cloud Run function Cloud Scheduler calls (with an
// OIDC token; Cloud Run checks it) to compact every flow, or the flows named
// in the request: ?flow=a&flow=b, or a JSON body {"flows": ["a", "b"]}.
//
// The entry point is "Compact". It answers 200 with a per-flow JSON report,
// or 500 with the same report when any flow failed, so the scheduler records
// the failure (and may retry: compaction is idempotent).
package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/bqcdc/bqcdc/internal/bqclient"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/logging"
	"github.com/bqcdc/bqcdc/sql/render"
)

// EntryPoint is the name the function is registered and deployed under.
const EntryPoint = "Compact"

// EnvFlowsDir names a folder of flow files that overrides the flows built
// into the functions.
const EnvFlowsDir = config.EnvFlowsDir

func init() {
	functions.HTTP(EntryPoint, Handle)
}

var (
	builtin fs.FS // set by the deployable root package: sql/flows embedded

	once    sync.Once
	service *runner
	initErr error
)

// UseFlows sets the flow files built into the function (the root package
// embeds sql/flows and calls it from init).
func UseFlows(files fs.FS) { builtin = files }

type runner struct {
	compactor *compact.Compactor
	bq        *bigquery.Client
	loc       render.Location
	flows     []*flow.Flow
}

func setup(ctx context.Context) (*runner, error) {
	once.Do(func() {
		cfg, err := config.FromEnv()
		if err != nil {
			initErr = fmt.Errorf("configuring compact: %w", err)
			return
		}
		flows, refused := flow.Load(os.Getenv(EnvFlowsDir), builtin)
		if len(flows) == 0 {
			initErr = errors.Join(refused...)
			return
		}
		ctx := context.WithoutCancel(ctx)
		bq, err := bqclient.NewBigQuery(ctx, cfg.BigQuery)
		if err != nil {
			initErr = err
			return
		}
		loc := render.Location{Project: cfg.BigQuery.Project, DefaultDataset: cfg.Dataset}
		log := logging.New(os.Stdout)
		for _, err := range refused {
			log.Error("flow refused: the other flows are compacted", "event", "flow_refused", "error", err.Error())
		}
		log.Info("compact configured", "config", cfg.Redacted(), "flows", len(flows))
		service = &runner{flows: flows, bq: bq, loc: loc, compactor: compact.New(bq, loc, compact.Options{
			VisibilityLag:      cfg.VisibilityLag,
			TombstoneRetention: time.Duration(cfg.TombstoneRetentionDays) * 24 * time.Hour,
			ChangelogRetention: time.Duration(cfg.ChangelogRetentionDays) * 24 * time.Hour,
		})}
	})
	return service, initErr
}

// Response is the function's answer.
type Response struct {
	Reports []compact.Report `json:"reports"`
	Error   string           `json:"error,omitempty"`
}

// Handle is the HTTP entry point.
func Handle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	svc, err := setup(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, Response{Error: err.Error()})
		return
	}
	names := r.URL.Query()["flow"]
	if r.Body != nil && r.ContentLength != 0 {
		var body struct {
			Flows []string `json:"flows"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, Response{Error: "decoding the request body: " + err.Error()})
			return
		}
		names = append(names, body.Flows...)
	}
	// Bind on every run: ingest adds columns to a changelog when its source
	// schema gains fields, and the run must fold them (and show them in the
	// view). Reading one table's metadata per source is cheap next to the
	// queries of a run.
	bound, refused := compact.Bind(r.Context(), svc.bq, svc.loc, svc.flows)
	if refused != nil && len(bound) == 0 {
		writeJSON(w, http.StatusInternalServerError, Response{Error: refused.Error()})
		return
	}
	reports, err := svc.compactor.RunSelected(r.Context(), bound, names)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Response{Error: err.Error()})
		return
	}
	status := http.StatusOK
	for _, rep := range reports {
		if rep.Outcome == compact.Failed {
			status = http.StatusInternalServerError
		}
	}
	resp := Response{Reports: reports}
	if refused != nil { // flows that do not bind: the others were compacted
		status, resp.Error = http.StatusInternalServerError, refused.Error()
	}
	writeJSON(w, status, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
