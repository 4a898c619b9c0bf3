// Package folds holds the integration tests of what the views, the change
// feeds and the bitemporal targets fold to (the acceptance scenarios,
// time travel, bitemporal corrections and in-order keys, the upgrade from
// generations) on the emulator. It is its own test binary with its own
// local stack: the emulator's SQL analyzer (go-googlesql, WASM) keeps what
// it analyzes, and the e2e binary with these tests in it grew it past its
// 2 GiB and died (internal/emulator, concession 11).
package folds

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
		fmt.Println("folds: skipping the emulator integration tests in -short mode")
		os.Exit(0)
	}
	var err error
	stack, err = localstack.Start(context.Background(), localstack.Options{
		Project: "folds", Dataset: "cdc", FlowsDir: "../testdata/flows", SchemasDir: "../testdata/schemas",
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

var _ = schema.Columns{}
