// Package localopts holds the local stack's options and the command line of
// `bqcdc local`, without the BigQuery emulator: the operator CLI
// (cmd/bqcdc) parses a `bqcdc local` command line with it (so -h and a
// mistyped flag answer at once) before it runs the dev binary
// (internal/dev/cmd/bqcdc-local), which parses the same command line with
// the same flags and starts package localstack.
package localopts

import (
	"flag"
	"log/slog"
	"time"

	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/config"
)

// Options configure a stack. A port of 0 picks a free one.
type Options struct {
	Project, Dataset string
	BigQueryPort     int // REST
	StoragePort      int // Storage Write gRPC
	PubSubPort       int
	RegistryPort     int
	FunctionPort     int
	FlowsDir         string
	SchemasDir       string
	Log              *slog.Logger
	// MaxDeliveryAttempts before a message goes to the dead-letter topic.
	MaxDeliveryAttempts int
	// PurgeJobsEvery deletes the emulator's finished jobs periodically (see
	// PurgeJobs); 0 never does.
	PurgeJobsEvery time.Duration
	// CompactEvery calls the Compact function on this schedule, as Cloud
	// Scheduler does in production; 0 never does. OnCompaction receives
	// each run's outcome.
	CompactEvery time.Duration
	OnCompaction func([]compact.Report, error)
	// VisibilityLag is the compaction watermark's distance from the clock.
	// Local appends are visible as soon as they are acknowledged, so a few
	// seconds suffice (production uses the ingest timeout plus clock skew).
	VisibilityLag time.Duration
	// FunctionConcurrency bounds the deliveries in flight over all relays,
	// as one Cloud Run instance's request concurrency does (Terraform's
	// ingest.max_request_concurrency).
	FunctionConcurrency int
	// ReplayKey signs and verifies replayed dead letters (BQCDC_REPLAY_KEY
	// in production); empty means DevReplayKey.
	ReplayKey []byte
	// LedgerSettle is how long after the append ledger was made compaction
	// starts trusting it (0: production's hour, so the local stack reads
	// every table; a test sets it short to run the ledger's way).
	LedgerSettle time.Duration
}

// Default are the documented local ports.
func Default() Options {
	return Options{Project: "local", Dataset: config.DefaultDataset, BigQueryPort: 9050, StoragePort: 9060,
		PubSubPort: 8085, RegistryPort: 8081, FunctionPort: 8080, FlowsDir: "sql/flows", SchemasDir: "schemas",
		MaxDeliveryAttempts: 5, PurgeJobsEvery: 10 * time.Second, CompactEvery: 30 * time.Second,
		VisibilityLag: 2 * time.Second, FunctionConcurrency: 80}
}

// Local is a `bqcdc local` command line: the stack's options and what to do
// once it is up.
type Local struct {
	Stack   Options
	Demo    bool // play the demo change stream
	Once    bool // exit after the demo
	Verbose bool // log every relay and function event
}

// LocalFlags returns the flag set of `bqcdc local`, writing into l, which it
// first sets to the defaults.
func LocalFlags(l *Local) *flag.FlagSet {
	*l = Local{Stack: Default(), Demo: true}
	o := &l.Stack
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.StringVar(&o.Project, "project", o.Project, "project id of the emulated BigQuery and Pub/Sub")
	fs.StringVar(&o.Dataset, "dataset", o.Dataset, "BigQuery dataset for changelogs, state and views")
	fs.StringVar(&o.FlowsDir, "flows", o.FlowsDir, "folder of flow declarations (*.sql)")
	fs.StringVar(&o.SchemasDir, "schemas", o.SchemasDir, "folder of Avro value schemas (<topic>-value.avsc)")
	fs.IntVar(&o.BigQueryPort, "bigquery-port", o.BigQueryPort, "BigQuery emulator REST port")
	fs.IntVar(&o.StoragePort, "storage-port", o.StoragePort, "BigQuery emulator Storage Write gRPC port")
	fs.IntVar(&o.PubSubPort, "pubsub-port", o.PubSubPort, "Pub/Sub emulator port")
	fs.IntVar(&o.RegistryPort, "registry-port", o.RegistryPort, "Schema Registry port")
	fs.IntVar(&o.FunctionPort, "function-port", o.FunctionPort, "Functions Framework port")
	fs.DurationVar(&o.CompactEvery, "compact-every", o.CompactEvery, "call the Compact function on this schedule, as Cloud Scheduler would (0: never)")
	fs.BoolVar(&l.Demo, "demo", l.Demo, "play the demo Debezium change stream for customers and orders")
	fs.BoolVar(&l.Once, "once", false, "exit after the demo: status 0 only if what landed is what was sent")
	fs.BoolVar(&l.Verbose, "v", false, "log every relay and function event")
	return fs
}
