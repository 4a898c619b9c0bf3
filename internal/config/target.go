package config

import (
	"flag"
	"fmt"
	"os"

	"github.com/bqcdc/bqcdc/internal/clients"
)

// Target is what the command-line tools' flags say of a deployment: its
// BigQuery (project, location, emulator endpoints, connect timeout), its
// default dataset, its flow and schema folders and its registry. The
// operator CLI (cmd/bqcdc) and the dev binary (its loadgen) register the
// same flags through it, each defaulting to its environment variable.
type Target struct {
	BigQuery clients.Config
	Dataset  string
	Flows    string
	Schemas  string
	Registry string

	envErr error // an invalid BQCDC_CONNECT_TIMEOUT, reported by Check
}

// Register defines the target's flags in fs.
func (t *Target) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.BigQuery.Project, "project", os.Getenv(EnvProject), "Google Cloud project (env "+EnvProject+")")
	fs.StringVar(&t.BigQuery.Location, "location", os.Getenv(EnvLocation), "BigQuery location for a new dataset and for jobs (env "+EnvLocation+")")
	fs.StringVar(&t.BigQuery.Endpoint, "bigquery-endpoint", os.Getenv(EnvBigQueryEndpoint), "BigQuery REST endpoint of an emulator, e.g. http://127.0.0.1:9050 (empty: Google)")
	fs.StringVar(&t.BigQuery.StorageEndpoint, "storage-endpoint", os.Getenv(EnvStorageEndpoint), "Storage Write gRPC endpoint of an emulator, e.g. 127.0.0.1:9060 (empty: Google)")
	dataset := os.Getenv(EnvDataset)
	if dataset == "" {
		dataset = DefaultDataset
	}
	fs.StringVar(&t.Dataset, "dataset", dataset, "dataset for changelogs, state and views")
	fs.StringVar(&t.Flows, "flows", "sql/flows", "folder of flow declarations (*.sql)")
	fs.StringVar(&t.Schemas, "schemas", "schemas", "folder of Avro value schemas (<topic>-value.avsc), used when the registry lacks a subject")
	fs.StringVar(&t.Registry, "registry-url", os.Getenv(EnvRegistryURL), "Schema Registry URL; credentials from env "+EnvRegistryUsername+" / "+EnvRegistryPassword)
	// An invalid environment value is reported by Check, as the flag's.
	t.BigQuery.ConnectTimeout, t.envErr = ConnectTimeoutFromEnv()
	fs.DurationVar(&t.BigQuery.ConnectTimeout, "connect-timeout", t.BigQuery.ConnectTimeout,
		"fail once BigQuery has been unreachable (connection refused, host name unresolvable, TLS handshake) this long (env "+EnvConnectTimeout+")")
}

// Check checks the parsed flags (fs, as Register defined them): the
// connect timeout's bounds.
func (t *Target) Check(fs *flag.FlagSet) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "connect-timeout" })
	if t.envErr != nil && !set {
		return t.envErr
	}
	if d := t.BigQuery.ConnectTimeout; d <= 0 || d > MaxConnectTimeout {
		return fmt.Errorf("--connect-timeout %s: want 1s to %s", d, MaxConnectTimeout)
	}
	return nil
}
