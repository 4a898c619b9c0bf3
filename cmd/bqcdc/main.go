// Command bqcdc is the operator CLI: it manages a deployment's BigQuery
// objects and runs what operators run.
//
//	bqcdc apply    create or update the dataset, changelog tables and views
//	bqcdc render   print the SQL of every flow's objects (no BigQuery needed)
//	bqcdc compact  fold changelogs into state tables once (--dry-run: price it)
//	bqcdc replay   publish dead letters again to their topics
//	bqcdc status   freshness, tail, compaction and dead letters per flow
//	bqcdc local    run everything on 127.0.0.1, play the demo (dev binary)
//	bqcdc loadgen  publish synthetic traffic and measure what lands (dev binary)
//
// `bqcdc <command> --help` lists a command's flags (exit 0); a wrong
// command line exits 2, a failed command 1. The flags naming a deployment
// are config.Target's, shared by every command.
//
// bqcdc itself links no dev package (TestNoEmulator): not the BigQuery
// emulator, the reference model or the view checker, so it builds in
// seconds where it deploys (scripts/deploy.sh, cloudbuild.yaml). `bqcdc
// local` and `bqcdc loadgen` check their flags here and then build and
// exec the dev binary internal/dev/cmd/bqcdc-local from the source (see
// runDev).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string) error
}

var commands = []command{
	{"local", "run the BigQuery and Pub/Sub emulators, a schema registry, the functions and the demo on 127.0.0.1", runLocal},
	{"apply", "create or update the dataset, changelog tables, dead-letter table, state tables and views in BigQuery", runApply},
	{"render", "print (or write with --out) the SQL of every flow's view; needs no BigQuery", runRender},
	{"compact", "fold the changelogs into the flows' state tables once, and print the per-flow report", runCompact},
	{"replay", "publish dead letters again to their topics (after fixing their cause); replays are counted once", runReplay},
	{"status", "per flow: newest change and lag, rows waiting in the tail, last compaction, dead letters; per source: changelog size (exit 1 past --max-* thresholds)", runStatus},
	{"loadgen", "publish synthetic Debezium traffic (tables, keys, rate or burst, row width) and measure what lands, locally or in a project", runLoadgen},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bqcdc <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nbqcdc <command> --help lists the flags of a command.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// run runs the command line args (without the program name) and returns
// the exit status: 0 done (or help shown), 1 the command failed, 2 the
// command line is wrong (usage on stderr).
func run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:])
		var ue usageError
		switch {
		case err == nil, errors.Is(err, errHelp):
			return 0
		case errors.As(err, &ue):
			fmt.Fprintln(os.Stderr, "bqcdc "+c.name+":", err)
			return 2
		default:
			fmt.Fprintln(os.Stderr, "bqcdc "+c.name+":", err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "bqcdc: unknown command %q\n\n", args[0])
	usage(os.Stderr)
	return 2
}
