package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// KeepDeployed decides the flows refused only because another flow or
// materialized view claims one of their names (d.Contested): each whose
// view is deployed and names it (catalog.FlowLabel, which apply writes)
// keeps its target, whatever the file order or a new file says; the
// others stay refused. It returns d's flows with the kept ones (in file
// order), refused without the kept ones' errors, and the kept flows. One
// metadata read per contested flow.
func KeepDeployed(ctx context.Context, bq *bigquery.Client, loc catalog.Location, d flow.Declarations, refused []error) (flows []*flow.Flow, still []error, kept []*flow.Flow, err error) {
	for _, f := range d.Contested {
		md, err := bq.Dataset(loc.Dataset(f)).Table(catalog.ViewName(f)).Metadata(ctx)
		switch {
		case bqerror.NotFound(err):
			continue
		case err != nil:
			return nil, nil, nil, fmt.Errorf("reading the view %s of contested flow %s: %w", f.Target, f.Name, err)
		}
		if md.Type == bigquery.ViewTable && md.Labels[catalog.FlowLabel] == catalog.FlowLabelValue(f.Name) {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return d.Flows, refused, nil, nil
	}
	flows = append(slices.Clone(d.Flows), kept...)
	slices.SortStableFunc(flows, func(a, b *flow.Flow) int {
		if a.Pos.File != b.Pos.File {
			return strings.Compare(a.Pos.File, b.Pos.File)
		}
		return a.Pos.Line - b.Pos.Line
	})
	for _, e := range refused {
		if f := d.ContestedFlow(e); f == nil || !slices.Contains(kept, f) {
			still = append(still, e)
		}
	}
	return flows, still, kept, nil
}
