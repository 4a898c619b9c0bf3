// Package bqclient creates the BigQuery clients every bqcdc component uses,
// for Google Cloud or for a local emulator. It is the one place that knows
// how the emulator differs at the connection level (see emulator.go).
package bqclient

import (
	"context"
	"fmt"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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

// NewWriter returns a Storage Write API client.
func NewWriter(ctx context.Context, c Config) (*managedwriter.Client, error) {
	var opts []option.ClientOption
	if c.StorageEndpoint != "" {
		conn, err := grpc.NewClient(c.StorageEndpoint,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithStreamInterceptor(nameEveryAppend))
		if err != nil {
			return nil, fmt.Errorf("dialing Storage Write emulator at %s: %w", c.StorageEndpoint, err)
		}
		opts = append(opts, option.WithGRPCConn(conn), option.WithoutAuthentication())
	}
	mw, err := managedwriter.NewClient(ctx, c.Project, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating Storage Write client for project %s: %w", c.Project, err)
	}
	return mw, nil
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
