// Package property holds the long-running property test of the views and
// compaction against the reference model, and the compaction benchmark. It
// is its own test binary (and so has its own 10-minute go test budget) with
// its own local stack.
package property

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/schema"
)

var stack *localstack.Stack

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("property: skipping the emulator property tests in -short mode")
		os.Exit(0)
	}
	var err error
	stack, err = localstack.Start(context.Background(), localstack.Options{
		Project: "property", Dataset: "cdc", FlowsDir: "../testdata/flows", SchemasDir: "../testdata/schemas",
		Log:                 slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		MaxDeliveryAttempts: 5,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local stack:", err)
		os.Exit(1)
	}
	code := m.Run()
	stack.Close()
	os.Exit(code)
}

var usersImage = schema.Columns{
	{Name: "userId", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "city", Type: schema.String},
	{Name: "operation", Type: schema.String}, {Name: "sequenceNum", Type: schema.Int64},
}
