package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"cloud.google.com/go/bigquery"
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

// runLoadgen publishes synthetic Debezium traffic and measures what lands.
//
// With --local it starts its own local stack (ports picked freely) with one
// flow per synthetic table; otherwise it targets a deployment: Pub/Sub of
// --project (or the emulator named by PUBSUB_EMULATOR_HOST), the registry of
// --registry-url, BigQuery of --project (or --bigquery-endpoint). There the
// tables must exist: --write dir writes the flows and schemas to deploy
// first (bqcdc apply --flows dir/flows --schemas dir/schemas, and the
// Terraform sources). --check then reads every view back against the
// reference model there too.
func runLoadgen(ctx context.Context, args []string) error {
	s := loadgen.DefaultSpec()
	var t target
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	t.register(fs)
	fs.StringVar(&s.Prefix, "prefix", s.Prefix, "topic prefix: topics are <prefix>.t000, <prefix>.t001, ...")
	fs.IntVar(&s.Tables, "tables", s.Tables, "source tables (topics)")
	fs.IntVar(&s.Messages, "messages", s.Messages, "messages per table")
	fs.IntVar(&s.Keys, "keys", s.Keys, "distinct keys per table (0: one per message)")
	fs.IntVar(&s.Width, "width", s.Width, "string columns per row")
	fs.IntVar(&s.ValueBytes, "value-bytes", s.ValueBytes, "bytes per string value")
	fs.Float64Var(&s.Rate, "rate", s.Rate, "messages per second over all tables (0: publish everything at once, as an initial snapshot does)")
	wait := fs.Duration("wait", 10*time.Minute, "how long to wait for every message to land")
	local := fs.Bool("local", false, "start a local stack for the load (in this process, on free ports)")
	write := fs.String("write", "", "write the flows and Avro schemas of the load to this folder and exit")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	check := fs.Bool("check", false, "once every message landed, also check every view of the load against the reference model (locally or in the project)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if *write != "" {
		return writeLoad(s, *write)
	}
	var (
		res loadgen.Result
		err error
	)
	if *local {
		res, err = loadLocal(ctx, s, *wait, *check)
	} else {
		res, err = loadRemote(ctx, s, t, *wait, *check)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Println(string(b))
	} else {
		fmt.Println(res)
	}
	if err != nil {
		return err
	}
	if res.Landed+res.DeadLettered < res.Published {
		return fmt.Errorf("%d of %d messages did not land within %s", res.Published-res.Landed-res.DeadLettered, res.Published, *wait)
	}
	return nil
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
