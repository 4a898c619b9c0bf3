// Package clients creates the Google Cloud clients every bqcdc component
// uses (BigQuery, Storage Write, Pub/Sub schemas), for Google Cloud or for the
// local emulators; the emulator's concessions come from package emulator.
package clients

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/bqquota"
	"github.com/bqcdc/bqcdc/internal/emulator"
	bqapi "google.golang.org/api/bigquery/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
)

// Config selects a BigQuery: Google's (both endpoints empty) or an emulator's.
type Config struct {
	Project  string
	Location string // dataset location for new datasets and query jobs; "" = BigQuery's default
	// Endpoint is the REST endpoint (e.g. http://127.0.0.1:9050) of an
	// emulator; StorageEndpoint its Storage Write gRPC host:port.
	Endpoint        string
	StorageEndpoint string
	// ConnectTimeout bounds how long a request that cannot reach BigQuery
	// at all (connection refused, host name unresolvable, TLS handshake)
	// is retried: past it the client fails with a *bqerror.Unreachable.
	// 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

// Emulated reports whether the config points at an emulator.
func (c Config) Emulated() bool { return c.Endpoint != "" }

// NewBigQuery returns a client for metadata and query jobs. Against Google
// its requests go through bqquota.Transport: a process with thousands of
// objects to read or update (apply, a compaction run) then waits for its
// share of BigQuery's per-method quota instead of being refused and
// backing off for seconds.
func NewBigQuery(ctx context.Context, c Config) (*bigquery.Client, error) {
	opts, err := restOptions(ctx, c)
	if err != nil {
		return nil, err
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

// restOptions are the options of a client of BigQuery's REST API: the
// emulator's endpoint, or Google's with its credentials under the quota
// limiter.
func restOptions(ctx context.Context, c Config) ([]option.ClientOption, error) {
	if c.Emulated() {
		return []option.ClientOption{option.WithEndpoint(c.Endpoint), option.WithoutAuthentication(),
			option.WithHTTPClient(&http.Client{Transport: sharedReach(http.DefaultTransport, c.ConnectTimeout, c.Endpoint)})}, nil
	}
	// The authenticated transport the client library would make itself
	// (its scopes), wrapped: WithHTTPClient replaces the library's own.
	base, err := htransport.NewTransport(ctx, http.DefaultTransport,
		option.WithScopes(bigquery.Scope, "https://www.googleapis.com/auth/cloud-platform"))
	if err != nil {
		return nil, fmt.Errorf("creating the BigQuery transport: %w", err)
	}
	return []option.ClientOption{option.WithHTTPClient(&http.Client{Transport: bqquota.NewTransport(sharedReach(base, c.ConnectTimeout, ""))})}, nil
}

// ListedTable is what BigQuery's table listing (tables.list) says of one
// table or view: enough to tell whether bqcdc made it as it is wanted
// (its labels), not its schema or contents.
type ListedTable struct {
	Name    string
	View    bool
	Labels  map[string]string
	Created time.Time
}

// TableLister lists a dataset's tables with their labels: one request per
// page of up to 1,000, where reading each table's metadata is one request
// per table. The BigQuery client library's own listing drops the labels.
type TableLister struct {
	svc     *bqapi.Service
	project string
}

// NewTableLister returns a lister of c's project.
func NewTableLister(ctx context.Context, c Config) (*TableLister, error) {
	opts, err := restOptions(ctx, c)
	if err != nil {
		return nil, err
	}
	return NewTableListerWith(ctx, c.Project, opts...)
}

// NewTableListerWith returns a lister of project with these client options
// (tests point it at a fake).
func NewTableListerWith(ctx context.Context, project string, opts ...option.ClientOption) (*TableLister, error) {
	svc, err := bqapi.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the BigQuery table lister: %w", err)
	}
	return &TableLister{svc: svc, project: project}, nil
}

// ListPage is the page size ListTables asks for.
const ListPage = 1000

// ListTables lists every table and view of dataset. A page refused for a
// passing reason (rate limits, 5xx) is asked again, a few times, with
// backoff; other errors end the listing.
func (l *TableLister) ListTables(ctx context.Context, dataset string) ([]ListedTable, error) {
	var out []ListedTable
	token := ""
	for {
		var page *bqapi.TableList
		err := retry(ctx, func() error {
			var err error
			page, err = l.svc.Tables.List(l.project, dataset).MaxResults(ListPage).PageToken(token).Context(ctx).Do()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("listing the tables of dataset %s: %w", dataset, err)
		}
		for _, t := range page.Tables {
			if t.TableReference == nil {
				continue
			}
			out = append(out, ListedTable{Name: t.TableReference.TableId, View: t.Type == "VIEW", Labels: t.Labels,
				Created: time.UnixMilli(t.CreationTime).UTC()})
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		token = page.NextPageToken
	}
}

// retry calls fn until it succeeds, fails for good, or has failed for a
// passing reason five times (waiting 1, 2, 4, 8 s between).
func retry(ctx context.Context, fn func() error) error {
	wait := time.Second
	for i := 0; ; i++ {
		err := fn()
		if err == nil || i == 4 || !bqerror.IsTransient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
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

// NewAppendClients returns the BigQuery client and the Storage Write client
// of c: the two a changelog writer (bqwrite.NewWriter) appends with.
func NewAppendClients(ctx context.Context, c Config) (*bigquery.Client, *managedwriter.Client, error) {
	bq, err := NewBigQuery(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	mw, err := NewWriter(ctx, c)
	if err != nil {
		bq.Close()
		return nil, nil, err
	}
	return bq, mw, nil
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
