package compact

import (
	"context"
	"fmt"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

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
