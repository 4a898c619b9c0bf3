package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestLocalOnce runs the README's `bqcdc local --once` in process (on free
// ports): the demo Debezium stream must land exactly as sent and every demo
// view must equal the reference model, or runLocal fails.
func TestLocalOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulators: skipped in -short mode")
	}
	if err := os.Chdir("../../../.."); err != nil { // the README runs it from the repository root
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	err := runLocal(ctx, []string{"--once", "--bigquery-port=0", "--storage-port=0", "--pubsub-port=0",
		"--registry-port=0", "--function-port=0"})
	if err != nil {
		t.Fatalf("bqcdc local --once: %v", err)
	}
}
