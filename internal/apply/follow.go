package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// MetadataReader reads a table's metadata: nil and no error when it does
// not exist (compaction's Warehouse is one).
type MetadataReader interface {
	Metadata(ctx context.Context, dataset, table string) (*bigquery.TableMetadata, error)
}

// ClientReader reads metadata with a BigQuery client.
func ClientReader(bq *bigquery.Client) MetadataReader { return clientReader{bq} }

type clientReader struct{ bq *bigquery.Client }

func (c clientReader) Metadata(ctx context.Context, dataset, table string) (*bigquery.TableMetadata, error) {
	md, err := c.bq.Dataset(dataset).Table(table).Metadata(ctx)
	if bqerror.NotFound(err) {
		return nil, nil
	}
	return md, err
}

// ReadSources reads, n tables at a time, what flows read as it is in
// BigQuery now: the columns of each source's changelog (and of each
// snapshot flow's table, under its flow.SourceKey), as flow.BindAll takes
// them, and the tables' metadata, as read (compaction decides from it which
// flows are idle). Compaction has no registry: the tables are the truth,
// and ingest may have added columns since the last apply. A snapshot table
// that does not exist is left out (flow.BindAll refuses its flows, naming
// it); a changelog that does not exist is an error.
func ReadSources(ctx context.Context, read MetadataReader, loc catalog.Location, flows []*flow.Flow, n int) (map[string]schema.Columns, map[string]*bigquery.TableMetadata, error) {
	type table struct {
		key, dataset, name, what string
		snapshot                 bool
	}
	var tables []table
	for _, src := range flow.Sources(flows) {
		tables = append(tables, table{key: src, dataset: loc.DefaultDataset, name: catalog.TableName(src), what: "the changelog of " + src})
	}
	// Snapshot flows read their own tables, by SourceKey.
	for _, st := range flow.SnapshotTables(flows) {
		tables = append(tables, table{key: flow.SnapshotKeyPrefix + st.String(), dataset: st.Dataset, name: st.Table, what: "the snapshot table " + st.String(), snapshot: true})
	}
	mds := make([]*bigquery.TableMetadata, len(tables))
	err := forEach(len(tables), n, func(i int) error {
		t := tables[i]
		md, err := read.Metadata(ctx, t.dataset, t.name)
		switch {
		case err != nil:
			return fmt.Errorf("reading %s: %w", t.what, err)
		case md == nil && !t.snapshot:
			return fmt.Errorf("reading %s: it does not exist (run bqcdc apply first?)", t.what)
		}
		mds[i] = md
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	changelogs := map[string]schema.Columns{}
	out := map[string]*bigquery.TableMetadata{}
	for i, t := range tables {
		if md := mds[i]; md != nil { // nil: a snapshot table that does not exist (its flows are refused at binding, naming it)
			changelogs[t.key] = bqschema.FromBigQuery(md.Schema)
			out[t.key] = md
		}
	}
	return changelogs, out, nil
}

// Follower brings the flows of a topic up to its changelog after ingest
// added columns (see ingest.FlowFollower), with table metadata calls only,
// which the ingest function's dataset-level role allows.
type Follower struct {
	bq    *bigquery.Client
	loc   catalog.Location
	flows []*flow.Flow
	log   *slog.Logger
}

// NewFollower returns a follower for flows.
func NewFollower(bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow, log *slog.Logger) *Follower {
	return &Follower{bq: bq, loc: loc, flows: flows, log: log}
}

// FollowChangelog brings the state tables and views of topic's flows up to
// its changelog as described by table.
func (f *Follower) FollowChangelog(ctx context.Context, topic string, table *bigquery.TableMetadata) error {
	mine := flow.ForSource(f.flows, topic)
	if len(mine) == 0 {
		return nil
	}
	// A flow that no longer binds is reported; the others follow.
	bound, err := flow.BindAll(mine, map[string]schema.Columns{topic: bqschema.FromBigQuery(table.Schema)})
	errs := []error{err}
	for _, b := range bound {
		var rep Report
		if err := FollowChangelog(ctx, f.bq, f.loc, b, &rep); err != nil {
			errs = append(errs, fmt.Errorf("flow %s: %w", b.Name, err))
			continue
		}
		f.log.Info("flow follows its evolved changelog", "event", "flow_evolved", "flow", b.Name, "report", strings.Join(rep, "; "))
	}
	return errors.Join(errs...)
}
