// Package clients creates the Google Cloud clients every bqcdc component
// uses (BigQuery, Storage Write, Pub/Sub schemas), for Google Cloud or for the
// local emulators; the emulator's concessions come from package emulator.
package clients

import (
	"context"
	"fmt"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"github.com/bqcdc/bqcdc/internal/emulator"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// Config selects a BigQuery: Google's (both endpoints empty) or an emulator's.
type Config struct {
	Project  string
	Location string // dataset location for new datasets and query jobs; "" = BigQuery's default
	// Endpoint is the REST endpoint (e.g. http://127.0.0.1:9050) of an
	// emulator; StorageEndpoint its Storage Write gRPC host:port.
	Endpoint        string
	StorageEndpoint string
}

// Emulated reports whether the config points at an emulator.
func (c Config) Emulated() bool { return c.Endpoint != "" }

// NewBigQuery returns a client for metadata and query jobs.
func NewBigQuery(ctx context.Context, c Config) (*bigquery.Client, error) {
	var opts []option.ClientOption
	if c.Emulated() {
		opts = append(opts, option.WithEndpoint(c.Endpoint), option.WithoutAuthentication())
	}
	bq, err := bigquery.NewClient(ctx, c.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating BigQuery client for project %s: %w", c.Project, err)
	}
	if c.Location != "" {
		bq.Location = c.Location
	}
	return bq, nil
}

// WriterOptions are the Storage Write client's options against Google:
// the default streams of every table share a few gRPC connections
// (managedwriter's multiplexing), so an instance that has appended to a
// thousand tables holds a handful of connections, not a thousand (measured
// against internal/dev/fakebq, see bqwrite's TestThousandTables*: 1
// connection and 14 goroutines for 1,000 tables, against 1,000 connections,
// 5,000 goroutines and ~100 MiB of heap without). Against an endpoint (the
// emulator) they are left out: see package emulator, concession 9.
func WriterOptions() []option.ClientOption {
	return []option.ClientOption{managedwriter.WithMultiplexing(), managedwriter.WithMultiplexPoolLimit(4)}
}

// NewWriter returns a Storage Write API client.
func NewWriter(ctx context.Context, c Config) (*managedwriter.Client, error) {
	opts := WriterOptions()
	if c.StorageEndpoint != "" {
		conn, err := emulator.DialStorage(c.StorageEndpoint)
		if err != nil {
			return nil, err
		}
		opts = []option.ClientOption{option.WithGRPCConn(conn), option.WithoutAuthentication()}
	}
	mw, err := managedwriter.NewClient(ctx, c.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating Storage Write client for project %s: %w", c.Project, err)
	}
	return mw, nil
}

// NewPubSubSchemas returns a client of Pub/Sub's schema service (for
// pubsubschema.New), or of the emulator at endpoint (host:port) when it is
// set. The connection is made on first use.
func NewPubSubSchemas(ctx context.Context, endpoint string) (*pubsubapi.SchemaClient, error) {
	var opts []option.ClientOption
	if endpoint != "" {
		opts = emulator.ClientOptions(endpoint)
	}
	c, err := pubsubapi.NewSchemaClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the Pub/Sub schema client: %w", err)
	}
	return c, nil
}

// Collect reads every row of a result into maps keyed by column name.
func Collect(it *bigquery.RowIterator) ([]map[string]bigquery.Value, error) {
	var rows []map[string]bigquery.Value
	for {
		row := map[string]bigquery.Value{}
		err := it.Next(&row)
		if err == iterator.Done {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading query results: %w", err)
		}
		rows = append(rows, row)
	}
}
