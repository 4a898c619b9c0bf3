package testenv

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
)

// Main is the TestMain of an integration test binary: it starts one local
// stack for the binary's tests from testdata (flows and schemas under dir),
// sets *stack, runs the tests and stops the stack. In -short mode it prints
// why the binary's tests do not run and exits 0. The stack logs errors
// only, and a message is dead-lettered by Pub/Sub after 5 attempts.
func Main(m *testing.M, name, dir string, stack **localstack.Stack) {
	flag.Parse()
	// -short skips the emulator suites, but not their benchmarks: CI runs
	// every benchmark once at its -short size (internal/dev/benchsize).
	if testing.Short() && flag.Lookup("test.bench").Value.String() == "" {
		fmt.Printf("%s: skipping the emulator integration tests in -short mode\n", name)
		os.Exit(0)
	}
	st, err := localstack.Start(context.Background(), localstack.Options{
		Project: name, Dataset: "cdc", FlowsDir: dir + "/flows", SchemasDir: dir + "/schemas",
		Log:                 slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		MaxDeliveryAttempts: 5,
		// No background purge: tests that run many queries use their own
		// emulator projects (see New).
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local stack:", err)
		os.Exit(1)
	}
	*stack = st
	code := m.Run()
	st.Close()
	os.Exit(code)
}
