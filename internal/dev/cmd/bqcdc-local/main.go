// Command bqcdc-local holds the bqcdc commands that link the BigQuery
// emulator or the reference model, so that the operator CLI (cmd/bqcdc)
// does not:
//
//	bqcdc-local local      run everything on 127.0.0.1, play the demo change stream
//	bqcdc-local loadgen    bqcdc loadgen: synthetic traffic, against a local stack of its own (--local) or a deployment
//
// It is a dev tool, never deployed, and nobody needs to type its name: `bqcdc
// local` and `bqcdc loadgen` parse their flags, build this package
// from the source (go build, cached) and exec it with the same command line.
// Run from the repository root, as `go run ./cmd/bqcdc local` is.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

var commands = map[string]func(ctx context.Context, args []string) error{
	"local":   runLocal,
	"loadgen": runLoadgen,
}

func main() {
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: bqcdc-local local|loadgen [flags]   (run as bqcdc local, bqcdc loadgen)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := commands[os.Args[1]](ctx, os.Args[2:]); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "bqcdc "+os.Args[1]+":", err)
		os.Exit(1)
	}
}
