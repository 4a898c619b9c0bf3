package compact

import (
	"context"
	"fmt"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqschema"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Bind binds flows to the schemas of their changelog tables as they are in
// BigQuery (the compact function has no registry: the tables are the truth).
func Bind(ctx context.Context, bq *bigquery.Client, loc render.Location, flows []*flow.Flow) ([]*flow.Bound, error) {
	sources := map[string]apply.SourceSchema{}
	for _, src := range flow.Sources(flows) {
		md, err := bq.Dataset(loc.DefaultDataset).Table(changelog.TableName(src)).Metadata(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the changelog of %s (run bqcdc apply first?): %w", src, err)
		}
		sources[src] = apply.SourceSchema{Source: src, Columns: bqschema.FromBigQuery(md.Schema)}
	}
	return apply.Bind(flows, sources)
}

// Select keeps the flows named in names (all when names is empty).
func Select(flows []*flow.Bound, names []string) ([]*flow.Bound, error) {
	if len(names) == 0 {
		return flows, nil
	}
	byName := map[string]*flow.Bound{}
	for _, b := range flows {
		byName[b.Name] = b
	}
	var out []*flow.Bound
	for _, n := range names {
		b, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("no flow named %q", n)
		}
		out = append(out, b)
	}
	return out, nil
}
