package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// BindToChangelogs binds flows to the schemas of their changelog tables as
// they are in BigQuery now (compaction has no registry: the tables are the
// truth, and ingest may have added columns since the last apply). It also
// returns the tables' metadata by source, as read (compaction decides from
// it which flows are idle); a snapshot flow's table is under its
// flow.SourceKey. It is BindAll for flows whose schemas are the tables'.
func BindToChangelogs(ctx context.Context, bq *bigquery.Client, loc catalog.Location, flows []*flow.Flow) ([]*flow.Bound, map[string]*bigquery.TableMetadata, error) {
	sources := map[string]SourceSchema{}
	mds := map[string]*bigquery.TableMetadata{}
	for _, src := range flow.Sources(flows) {
		md, err := bq.Dataset(loc.DefaultDataset).Table(catalog.TableName(src)).Metadata(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the changelog of %s (run bqcdc apply first?): %w", src, err)
		}
		sources[src] = SourceSchema{Source: src, Columns: bqschema.FromBigQuery(md.Schema)}
		mds[src] = md
	}
	// Snapshot flows read their own tables, by SourceKey.
	snaps, err := SnapshotTables(ctx, bq, flows, sources)
	if err != nil {
		return nil, nil, err
	}
	for k, md := range snaps {
		mds[k] = md
	}
	bound, err := BindAll(flows, sources)
	return bound, mds, err
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
	bound, err := BindAll(mine, map[string]SourceSchema{topic: {Source: topic, Columns: bqschema.FromBigQuery(table.Schema)}})
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
