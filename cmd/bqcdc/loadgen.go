package main

import (
	"context"
	"flag"

	"github.com/bqcdc/bqcdc/internal/loadgen"
)

// runLoadgen checks the flags of `bqcdc loadgen` and runs it in the dev
// binary (internal/dev/cmd/bqcdc-local, see runDev), as `bqcdc local`:
// the load generator links the reference model that --check compares the
// views with, and --local the local stack, which the operator CLI does not
// carry (issue 39: TestOperatorDeps). Every mode runs there: --local
// against a local stack of its own, --write writing the load's flows and
// schemas, and otherwise the deployment the target flags name (Pub/Sub of
// --project or PUBSUB_EMULATOR_HOST, the registry of --registry-url,
// BigQuery of --project or --bigquery-endpoint; the tables must exist:
// --write dir, then bqcdc apply --flows dir/flows --schemas dir/schemas).
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
	return runDev(ctx, "loadgen", setFlags(fs, func(string) bool { return true }))
}
