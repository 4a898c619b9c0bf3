package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/loadgen"
	"github.com/bqcdc/bqcdc/internal/redact"
	"github.com/bqcdc/bqcdc/internal/registry"
)

// runLoadgen runs `bqcdc loadgen`: with --local the load against a local
// stack of its own (ports picked freely), with one flow per synthetic
// table; with --write the load's flows and schemas for a deployment;
// otherwise the load against the deployment the target flags name (the
// tables must exist: --write, then bqcdc apply), --check comparing every
// view with the reference model. It lives here, not in the operator CLI,
// because it links the reference model and the local stack (issue 39);
// bqcdc loadgen checks the flags and execs it with them.
func runLoadgen(ctx context.Context, args []string) error {
	t, c, fs, err := loadgen.Parse("loadgen", args)
	if err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if err := t.Check(fs); err != nil {
		return err
	}
	var res loadgen.Result
	switch {
	case c.Write != "":
		return writeLoad(c.Spec, c.Write)
	case c.Local:
		res, err = loadLocal(ctx, c.Spec, c.Wait, c.Check)
	default:
		res, err = loadRemote(ctx, c.Spec, t, c.Wait, c.Check)
	}
	return c.Report(os.Stdout, res, err)
}

// writeLoad writes the load's flows and schemas, to deploy before a remote run.
func writeLoad(s loadgen.Spec, dir string) error {
	if err := s.Write(dir); err != nil {
		return err
	}
	fmt.Printf("wrote %s/flows/loadgen.sql and %d schemas in %s/schemas\n", dir, s.Tables, dir)
	return nil
}

// loadRemote runs the load against a deployment (Pub/Sub of its project,
// or the emulator PUBSUB_EMULATOR_HOST names; its registry; its BigQuery).
func loadRemote(ctx context.Context, s loadgen.Spec, t config.Target, wait time.Duration, check bool) (loadgen.Result, error) {
	if t.BigQuery.Project == "" {
		return loadgen.Result{}, fmt.Errorf("--project (or %s) is required", config.EnvProject)
	}
	if t.Registry == "" {
		return loadgen.Result{}, errors.New("--registry-url is required: the load is Confluent-framed Avro")
	}
	if err := redact.CheckURL(t.Registry); err != nil {
		return loadgen.Result{}, fmt.Errorf("--registry-url (or %s): %w", config.EnvRegistryURL, err)
	}
	bq, err := clients.NewBigQuery(ctx, t.BigQuery)
	if err != nil {
		return loadgen.Result{}, err
	}
	defer bq.Close()
	ps, err := pubsub.NewClient(ctx, t.BigQuery.Project) // honours PUBSUB_EMULATOR_HOST
	if err != nil {
		return loadgen.Result{}, fmt.Errorf("creating the Pub/Sub client: %w", err)
	}
	defer ps.Close()
	reg := registry.New(t.Registry, registry.Options{Username: os.Getenv(config.EnvRegistryUsername), Password: os.Getenv(config.EnvRegistryPassword)})
	res, err := loadgen.Run(ctx, s, loadgen.Target{PubSub: ps, Registry: reg, BigQuery: bq, Dataset: t.Dataset, Progress: os.Stderr}, wait)
	if err != nil || !check {
		return res, err
	}
	if res.Landed < res.Published {
		return res, fmt.Errorf("views not checked: %d of %d messages landed (%d dead-lettered)", res.Landed, res.Published, res.DeadLettered)
	}
	problems, err := viewcheck.Load(ctx, bq, catalog.Location{Project: t.BigQuery.Project, DefaultDataset: t.Dataset}, s)
	if err != nil {
		return res, err
	}
	if problems != "" {
		return res, fmt.Errorf("views differ from the reference model:\n%s", problems)
	}
	fmt.Fprintf(os.Stderr, "every view of the load (%d tables) equals the reference model\n", s.Tables)
	return res, nil
}

// loadLocal runs the load against a local stack of its own.
func loadLocal(ctx context.Context, s loadgen.Spec, wait time.Duration, check bool) (loadgen.Result, error) {
	o := localstack.DefaultOptions()
	o.BigQueryPort, o.StoragePort, o.PubSubPort, o.RegistryPort, o.FunctionPort = 0, 0, 0, 0, 0
	o.CompactEvery = 0
	o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := time.Now()
	st, cleanup, err := localstack.StartLoad(ctx, s, o)
	if err != nil {
		return loadgen.Result{}, err
	}
	defer cleanup()
	defer st.Close()
	fmt.Fprintf(os.Stderr, "local stack with %d tables up in %s\n", s.Tables, time.Since(start).Round(time.Millisecond))
	res, err := loadgen.Run(ctx, s, st.LoadTarget(os.Stderr), wait)
	if err != nil || !check {
		return res, err
	}
	problems, err := st.CheckViews(ctx)
	if err != nil {
		return res, err
	}
	if len(problems) > 0 {
		return res, fmt.Errorf("views differ from the reference model:\n%s", problems)
	}
	fmt.Fprintf(os.Stderr, "every view equals the reference model\n")
	return res, nil
}
