package apply

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Target names where bqcdc's objects live.
type Target struct {
	Project string
	Dataset string // the default dataset: changelogs, dead letters, unqualified targets
}

// BindAll checks every flow against its source's changelog columns. It
// returns the flows that bind, and an error joining those of the flows that
// do not (file:line:column, naming the flow; errors.As finds a *flow.Error
// in it): one refused flow never stops the others.
func BindAll(flows []*flow.Flow, sources map[string]SourceSchema) ([]*flow.Bound, error) {
	changelogs := make(map[string]schema.Columns, len(sources))
	for src, s := range sources {
		changelogs[src] = s.Columns
	}
	bound, refused := flow.BindAll(flows, changelogs)
	return bound, errors.Join(refused...)
}

// LookupSources resolves the changelog layout of every flow source.
func LookupSources(ctx context.Context, flows []*flow.Flow, schemas Schemas) (map[string]SourceSchema, error) {
	out := map[string]SourceSchema{}
	tables := map[string]string{}
	for _, src := range flow.Sources(flows) {
		name := catalog.TableName(src)
		if other, clash := tables[name]; clash {
			return nil, fmt.Errorf("sources %s and %s would share the changelog table %s: rename one topic", other, src, name)
		}
		tables[name] = src
		s, err := schemas.Lookup(ctx, src)
		if err != nil {
			return nil, err
		}
		out[src] = s
	}
	return out, nil
}

// All applies everything the flows need: the dataset, one changelog per
// source (clustered by the keys of its first flow), the dead-letter table,
// and each flow's state and view. A flow that does not bind is skipped: All
// applies the others and then returns the bound flows with Bind's error.
func All(ctx context.Context, bq *bigquery.Client, t Target, flows []*flow.Flow, schemas Schemas, rep *Report) ([]*flow.Bound, error) {
	sources, err := LookupSources(ctx, flows, schemas)
	if err != nil {
		return nil, err
	}
	bound, refused := BindAll(flows, sources)
	if err := apply(ctx, bq, t, bound, sources, rep); err != nil {
		return nil, err
	}
	return bound, refused
}

func apply(ctx context.Context, bq *bigquery.Client, t Target, bound []*flow.Bound, sources map[string]SourceSchema, rep *Report) error {
	if err := Dataset(ctx, bq, t.Dataset, rep); err != nil {
		return err
	}
	for _, src := range boundSources(bound) {
		var keys []string
		for _, b := range bound {
			if b.Source.Name == src {
				keys = b.Keys.Names()
				break
			}
		}
		if err := Changelog(ctx, bq, t.Dataset, sources[src], keys, rep); err != nil {
			return err
		}
	}
	if err := DeadLetters(ctx, bq, t.Dataset, rep); err != nil {
		return err
	}
	if err := CompactionReport(ctx, bq, t.Dataset, rep); err != nil {
		return err
	}
	loc := catalog.Location{Project: t.Project, DefaultDataset: t.Dataset}
	for _, b := range bound {
		if err := FlowObjects(ctx, bq, loc, b, rep); err != nil {
			return err
		}
	}
	if len(bound) == 0 {
		return nil
	}
	return Status(ctx, bq, loc, boundFlows(bound), rep)
}

func boundFlows(bound []*flow.Bound) []*flow.Flow {
	flows := make([]*flow.Flow, len(bound))
	for i, b := range bound {
		flows[i] = b.Flow
	}
	return flows
}

func boundSources(bound []*flow.Bound) []string {
	return flow.Sources(boundFlows(bound))
}

// Unbound lists the flows of flows that are not in bound (refused at
// binding): compaction keeps the changelog days of their sources.
func Unbound(flows []*flow.Flow, bound []*flow.Bound) []*flow.Flow {
	in := make(map[*flow.Flow]bool, len(bound))
	for _, b := range bound {
		in[b.Flow] = true
	}
	var out []*flow.Flow
	for _, f := range flows {
		if !in[f] {
			out = append(out, f)
		}
	}
	return out
}
