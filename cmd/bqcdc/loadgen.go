package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/loadgen"
	"github.com/bqcdc/bqcdc/internal/redact"
	"github.com/bqcdc/bqcdc/internal/registry"
)

// runLoadgen publishes synthetic Debezium traffic and measures what lands.
//
// It targets a deployment: Pub/Sub of --project (or the emulator named by
// PUBSUB_EMULATOR_HOST), the registry of --registry-url, BigQuery of
// --project (or --bigquery-endpoint). There the tables must exist: --write
// dir writes the flows and schemas to deploy first (bqcdc apply --flows
// dir/flows --schemas dir/schemas, and the Terraform sources); --check then
// reads every view back against the reference model there too. With
// --local the dev binary runs the load against a local stack of its own,
// with one flow per synthetic table (see runDev); it gets the loadgen flags
// set here, not the ones naming a deployment.
func runLoadgen(ctx context.Context, args []string) error {
	var t target
	var c loadgen.Command
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	t.register(fs)
	c.Register(fs)
	if err := t.parse(ctx, fs, args); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return usageError{err}
	}
	if c.Write != "" {
		return writeLoad(c.Spec, c.Write)
	}
	if c.Local {
		return runDev(ctx, "loadgen", setFlags(fs, loadgenFlag))
	}
	res, err := loadRemote(ctx, c.Spec, t, c.Wait, c.Check)
	return c.Report(os.Stdout, res, err)
}

// loadgenFlag reports whether name is a flag of loadgen.Command (what the
// dev binary's loadgen parses).
func loadgenFlag(name string) bool {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	new(loadgen.Command).Register(fs)
	return fs.Lookup(name) != nil
}

// writeLoad writes the load's flows and schemas, to deploy before a remote run.
func writeLoad(s loadgen.Spec, dir string) error {
	if err := s.Write(dir); err != nil {
		return err
	}
	fmt.Printf("wrote %s/flows/loadgen.sql and %d schemas in %s/schemas\n", dir, s.Tables, dir)
	return nil
}

func loadRemote(ctx context.Context, s loadgen.Spec, t target, wait time.Duration, check bool) (loadgen.Result, error) {
	if t.bq.Project == "" {
		return loadgen.Result{}, fmt.Errorf("--project (or %s) is required", config.EnvProject)
	}
	if t.registry == "" {
		return loadgen.Result{}, errors.New("--registry-url is required: the load is Confluent-framed Avro")
	}
	if err := redact.CheckURL(t.registry); err != nil {
		return loadgen.Result{}, fmt.Errorf("--registry-url (or %s): %w", config.EnvRegistryURL, err)
	}
	bq, err := clients.NewBigQuery(ctx, t.bq)
	if err != nil {
		return loadgen.Result{}, err
	}
	defer bq.Close()
	ps, err := pubsub.NewClient(ctx, t.bq.Project) // honours PUBSUB_EMULATOR_HOST
	if err != nil {
		return loadgen.Result{}, fmt.Errorf("creating the Pub/Sub client: %w", err)
	}
	defer ps.Close()
	reg := registry.New(t.registry, registry.Options{Username: os.Getenv(config.EnvRegistryUsername), Password: os.Getenv(config.EnvRegistryPassword)})
	res, err := loadgen.Run(ctx, s, loadgen.Target{PubSub: ps, Registry: reg, BigQuery: bq, Dataset: t.dataset, Progress: os.Stderr}, wait)
	if err != nil || !check {
		return res, err
	}
	if res.Landed < res.Published {
		return res, fmt.Errorf("views not checked: %d of %d messages landed (%d dead-lettered)", res.Landed, res.Published, res.DeadLettered)
	}
	return res, checkLoadViews(ctx, bq, catalog.Location{Project: t.bq.Project, DefaultDataset: t.dataset}, s)
}

// checkLoadViews compares each view of the load's flows (as --write wrote
// them and bqcdc apply created them) with the reference model.
func checkLoadViews(ctx context.Context, bq *bigquery.Client, loc catalog.Location, s loadgen.Spec) error {
	problems, err := viewcheck.Load(ctx, bq, loc, s)
	if err != nil {
		return err
	}
	if problems != "" {
		return fmt.Errorf("views differ from the reference model:\n%s", problems)
	}
	fmt.Fprintf(os.Stderr, "every view of the load (%d tables) equals the reference model\n", s.Tables)
	return nil
}
