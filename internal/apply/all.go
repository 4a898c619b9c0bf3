package apply

import (
	"context"
	"fmt"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// Target names where bqcdc's objects live.
type Target struct {
	Project string
	Dataset string // the default dataset: changelogs, dead letters, unqualified targets
}

// BindAll checks every flow against its source's changelog columns and returns
// the bound flows, with all errors (file:line:column) at once.
func BindAll(flows []*flow.Flow, sources map[string]SourceSchema) ([]*flow.Bound, error) {
	var bound []*flow.Bound
	var errs flow.ErrorList
	for _, f := range flows {
		b, err := flow.Bind(f, sources[f.Source.Name].Columns)
		if list, ok := err.(flow.ErrorList); ok {
			errs = append(errs, list...)
			continue
		} else if err != nil {
			return nil, err
		}
		bound = append(bound, b)
	}
	return bound, errs.Err()
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
// and each flow's state and view.
func All(ctx context.Context, bq *bigquery.Client, t Target, flows []*flow.Flow, schemas Schemas, rep *Report) ([]*flow.Bound, error) {
	sources, err := LookupSources(ctx, flows, schemas)
	if err != nil {
		return nil, err
	}
	bound, err := BindAll(flows, sources)
	if err != nil {
		return nil, err
	}
	return bound, apply(ctx, bq, t, bound, sources, rep)
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
	return nil
}

func boundSources(bound []*flow.Bound) []string {
	flows := make([]*flow.Flow, len(bound))
	for i, b := range bound {
		flows[i] = b.Flow
	}
	return flow.Sources(flows)
}
