package compact

import (
	"context"
	"fmt"
	"slices"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// Prepare is the entry of every compaction run (the Compact function and
// `bqcdc compact`): it keeps the deployed flows of one shard (before
// binding, so a shard reads only its own sources), binds them to their
// changelogs or snapshot tables (one metadata read per source, which the
// run reuses), and names the flows to run (all when names is empty, each
// once). refused holds the flows that do not bind (file:line:column): the
// others run, and the refused keep their sources' changelog days
// (Selection.Unbound). err is a request that cannot run: a bad shard, or a
// name that is no deployed flow.
func Prepare(ctx context.Context, bq *bigquery.Client, loc catalog.Location, deployed []*flow.Flow, names []string, shard, shards int) (sel Selection, refused, err error) {
	if err := ValidShards(shard, shards); err != nil {
		return Selection{}, nil, err
	}
	for _, n := range names {
		if !slices.ContainsFunc(deployed, func(f *flow.Flow) bool { return f.Name == n }) {
			return Selection{}, nil, fmt.Errorf("no flow named %q", n)
		}
	}
	flows := deployed
	if shards > 1 {
		flows = slices.DeleteFunc(slices.Clone(deployed), func(f *flow.Flow) bool { return ShardOf(f.SourceKey(), shards) != shard })
	}
	bound, changelogs, refused := apply.BindToChangelogs(ctx, bq, loc, flows)
	sel = Selection{Flows: bound, Unbound: apply.Unbound(flows, bound), Changelogs: changelogs,
		Shard: shard, Shards: shards, Sharded: true}
	if len(names) > 0 {
		// Named flows that do not bind (or are of another shard) do not run.
		sel.Names = []string{}
		for _, n := range names {
			if slices.ContainsFunc(bound, func(b *flow.Bound) bool { return b.Name == n }) && !slices.Contains(sel.Names, n) {
				sel.Names = append(sel.Names, n)
			}
		}
		if len(sel.Names) == 0 {
			sel.Flows = nil
		}
	}
	return sel, refused, nil
}

// Select keeps the flows named in names (all when names is empty), each
// once however often it is named.
func Select(flows []*flow.Bound, names []string) ([]*flow.Bound, error) {
	if len(names) == 0 {
		return flows, nil
	}
	byName := map[string]*flow.Bound{}
	for _, b := range flows {
		byName[b.Name] = b
	}
	var out []*flow.Bound
	seen := map[string]bool{}
	for _, n := range names {
		b, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("no flow named %q", n)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, b)
		}
	}
	return out, nil
}

// readState reads a state table's metadata; nil when it does not exist.
func (c *Compactor) readState(ctx context.Context, b *flow.Bound) (*bigquery.TableMetadata, error) {
	md, err := c.wh.Metadata(ctx, c.loc.Dataset(b.Flow), catalog.StateName(b.Flow))
	if err != nil {
		return nil, fmt.Errorf("reading the state table of flow %s: %w", b.Name, err)
	}
	return md, nil
}
