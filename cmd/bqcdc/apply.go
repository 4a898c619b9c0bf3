package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"cloud.google.com/go/bigquery"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/progress"
	"github.com/bqcdc/bqcdc/internal/redact"
	"github.com/bqcdc/bqcdc/internal/registry"
)

// target is a deployment's flags (config.Target) and what a command
// learnt of its flows.
type target struct {
	config.Target
	refused []error // flows open could not parse; the others run
	printed int     // how many of refused open printed already
	golds   []*flow.Gold
}

func (t *target) register(fs *flag.FlagSet) { t.Target.Register(fs) }

// parse parses a command's flags (parseFlags) and checks the target's:
// a wrong value is a usage error, found before any network work.
func (t *target) parse(ctx context.Context, fs *flag.FlagSet, args []string) error {
	if err := parseFlags(ctx, fs, args); err != nil {
		return err
	}
	if err := t.Check(fs); err != nil {
		return usageError{err}
	}
	return nil
}

func (t *target) schemaSource() (apply.Schemas, error) {
	s := apply.Schemas{Dir: t.Schemas}
	if t.Registry != "" {
		if err := redact.CheckURL(t.Registry); err != nil {
			return s, fmt.Errorf("--registry-url (or %s): %w", config.EnvRegistryURL, err)
		}
		s.Registry = registry.New(t.Registry, registry.Options{
			Username: os.Getenv(config.EnvRegistryUsername), Password: os.Getenv(config.EnvRegistryPassword)})
	}
	return s, nil
}

// open reads the flows and connects to BigQuery for commands that need both.
func (t *target) open(ctx context.Context) ([]*flow.Flow, *bigquery.Client, error) {
	if t.BigQuery.Project == "" {
		return nil, nil, usagef("--project (or %s) is required", config.EnvProject)
	}
	d, refused := flow.ParseDirAll(t.Flows)
	if len(d.Flows) == 0 && len(d.Contested) == 0 {
		return nil, nil, errors.Join(refused...)
	}
	// Refusals are printed before any network work: a command that then
	// waits on BigQuery has said what it will not run. Flows refused only
	// for a name another flow claims are printed once it is known which
	// of them the deployment keeps (apply.KeepDeployed).
	var shown, contested []error
	for _, err := range refused {
		if d.ContestedFlow(err) != nil {
			contested = append(contested, err)
			continue
		}
		fmt.Fprintln(os.Stderr, "refused:", err)
		shown = append(shown, err)
	}
	bq, err := clients.NewBigQuery(ctx, t.BigQuery)
	if err != nil {
		return nil, nil, err
	}
	flows, still, kept, err := apply.KeepDeployed(ctx, bq, catalog.Location{Project: t.BigQuery.Project, DefaultDataset: t.Dataset}, d, contested)
	if err != nil {
		bq.Close()
		return nil, nil, err
	}
	for _, f := range kept {
		fmt.Fprintf(os.Stderr, "kept: flow %s keeps target %s: its deployed view names it (label %s); the other claimants stay refused\n", f.Name, f.Target, catalog.FlowLabel)
	}
	refused = append(shown, still...) // notAll prints those past the ones shown
	printed := len(shown)
	t.refused, t.printed, t.golds = refused, printed, d.Golds
	if len(flows) == 0 {
		bq.Close()
		return nil, nil, errors.Join(refused...)
	}
	return flows, bq, nil
}

// cliApplyConcurrency is bqcdc apply's default concurrency. Requests go
// through bqquota.Transport, which keeps them within BigQuery's
// per-method quota however many are in flight, so the bound only has to
// cover the round trips: a new flow is about 8 requests in a row, and at
// 100 ms each 32 at once make the ~100 requests a second the quota allows
// (BenchmarkApply10000Flows: 10,000 flows first applied in ~7 minutes at
// 64). The library's default (apply.DefaultConcurrency) stays lower for
// the emulator.
const cliApplyConcurrency = 32

func runApply(ctx context.Context, args []string) error {
	var t target
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	t.register(fs)
	retention := fs.Int("dead-letter-retention-days", 0, "expire _bqcdc_dead_letters partitions this many days old (0: keep them; Terraform's dead_letter_retention_days)")
	concurrency := fs.Int("concurrency", cliApplyConcurrency, "objects (tables, views) applied and schemas looked up at once; requests are paced to BigQuery's per-method quota whatever the number")
	verify := fs.Bool("verify", false, "read every object instead of trusting the labels a listing shows (one request per object); after editing objects by hand")
	readWatermarks := fs.Bool("read-watermarks", false, "read each flow's watermark with a query (one job per flow) instead of reusing its view's pruning bound; after deleting state rows by hand")
	if err := t.parse(ctx, fs, args); err != nil {
		return err
	}
	if *retention < 0 || *retention > config.MaxRetentionDays {
		// Days become milliseconds of partition expiration: bounded so they
		// cannot overflow.
		return usagef("--dead-letter-retention-days=%d: want 0 (keep) to %d", *retention, config.MaxRetentionDays)
	}
	if *concurrency < 1 {
		return usagef("--concurrency must be at least 1, got %d", *concurrency)
	}
	flows, bq, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer bq.Close()
	// Progress goes to stderr, the report to stdout: a redirected report
	// stays one line per object.
	meter := progress.New(os.Stderr, "apply", "objects", 0, progress.IsTerminal(os.Stderr))
	var rep apply.Report
	lister, err := clients.NewTableLister(ctx, t.BigQuery)
	if err != nil {
		return err
	}
	opts := apply.Options{Concurrency: *concurrency, Progress: meter, ReadWatermarks: *readWatermarks, Lister: lister, Verify: *verify,
		// A state's move to another partitioning says what it costs before
		// it starts (with the progress, on stderr).
		Notices: os.Stderr,
		// An emulator cannot call table functions, and creating them grows
		// its analyzer's memory (internal/emulator, concession 11).
		SkipTableFunctions: t.BigQuery.Emulated(),
		// Materialized views' rows join the status view once their
		// states exist.
		StatusWithGolds: len(t.golds) > 0}
	schemas, err := t.schemaSource()
	if err != nil {
		return err
	}
	bound, err := apply.AllWith(ctx, bq, apply.Target{Project: t.BigQuery.Project, Dataset: t.Dataset, DeadLetterRetentionDays: *retention}, flows, schemas, opts, &rep)
	if len(t.golds) > 0 && (err == nil || errors.As(err, new(*flow.Error))) {
		// Materialized views read the flows' views: they come after them.
		golds, refused := flow.BindGolds(t.golds, bound, t.Dataset)
		err = errors.Join(err, refused, apply.Golds(ctx, bq, catalog.Location{Project: t.BigQuery.Project, DefaultDataset: t.Dataset}, bound, golds, opts, &rep))
	}
	meter.Finish()
	for _, line := range rep {
		fmt.Println(line)
	}
	return t.notAll(err)
}

// notAll is the error of a command that ran the flows it could: err, plus
// every refused flow (by open, or by binding: an err holding a *flow.Error),
// so that any refused flow makes the command fail, naming it.
func (t *target) notAll(err error) error {
	if errors.As(err, new(*flow.Error)) {
		t.refused, err = append(t.refused, err), nil
	}
	refused := errors.Join(t.refused[t.printed:]...)
	switch {
	case refused == nil && t.printed == 0:
		return err
	case refused == nil:
		return errors.Join(err, fmt.Errorf("%d flow(s) refused (printed above; the others ran)", t.printed))
	case t.printed > 0:
		return errors.Join(err, fmt.Errorf("flows refused (the others ran; %d more printed above):\n%w", t.printed, refused))
	}
	return errors.Join(err, fmt.Errorf("flows refused (the others ran):\n%w", refused))
}
