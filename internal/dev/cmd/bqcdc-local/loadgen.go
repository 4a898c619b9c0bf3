package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/loadgen"
)

// runLoadgen runs `bqcdc loadgen --local`: the load against a local stack of
// its own (ports picked freely), with one flow per synthetic table. It
// takes the loadgen flags only: bqcdc forwards those, not the ones naming
// a deployment.
func runLoadgen(ctx context.Context, args []string) error {
	var c loadgen.Command
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	res, err := loadLocal(ctx, c.Spec, c.Wait, c.Check)
	return c.Report(os.Stdout, res, err)
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
