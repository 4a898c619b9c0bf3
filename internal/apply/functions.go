package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// Functions creates or replaces a flow's time-travel table functions,
// <target>_at(ts) and <target>_changes(from_position, to_position), or for a
// bitemporal flow <target>_as_of(business_time, system_time), with
// CREATE OR REPLACE TABLE FUNCTION (DDL costs nothing). They read the whole
// history, not the view's pruning bound, so compaction never rewrites them;
// a column ingest adds to the changelog reaches them at the next apply.
//
// What was applied is recorded as a hash of the DDL in the view's label
// catalog.ViewFunctionsLabel, so a second apply changes nothing and runs no job; the
// label is compared rather than the routines themselves because the
// emulator does not implement routines.get (it answers an error the client
// retries). The view must exist (FlowObjects applies it first).
func Functions(ctx context.Context, bq *bigquery.Client, loc catalog.Location, b *flow.Bound, rep *Report) error {
	view := bq.Dataset(loc.Dataset(b.Flow)).Table(catalog.ViewName(b.Flow))
	md, err := view.Metadata(ctx)
	if err != nil {
		return fmt.Errorf("reading view %s: %w", b.Target, err)
	}
	return functions(ctx, bq, view, md, loc, b, rep)
}

// functions is Functions given the view and its current metadata.
func functions(ctx context.Context, bq *bigquery.Client, view *bigquery.Table, md *bigquery.TableMetadata, loc catalog.Location, b *flow.Bound, rep *Report) error {
	ddls, err := FunctionDDL(b, loc)
	if err != nil {
		return err
	}
	h := sha256.New()
	for _, f := range ddls {
		h.Write([]byte(f.DDL))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:32]
	if md.Labels[catalog.ViewFunctionsLabel] == sum {
		for _, f := range ddls {
			rep.add("table function %s.%s: unchanged", loc.Dataset(b.Flow), f.Name)
		}
		return nil
	}
	for _, f := range ddls {
		if err := runDDL(ctx, bq, f.DDL); err != nil {
			return fmt.Errorf("creating table function %s.%s of flow %s: %w", loc.Dataset(b.Flow), f.Name, b.Name, err)
		}
		rep.add("table function %s.%s: created or replaced", loc.Dataset(b.Flow), f.Name)
	}
	var upd bigquery.TableMetadataToUpdate
	keepLabels(&upd, md.Labels)
	upd.SetLabel(catalog.ViewFunctionsLabel, sum)
	if _, err := view.Update(ctx, upd, md.ETag); err != nil {
		return fmt.Errorf("labelling view %s with its functions: %w", b.Target, err)
	}
	return nil
}

// NamedDDL is the DDL of one of a flow's table functions.
type NamedDDL struct{ Name, DDL string }

// tableFunction is one of a flow's table functions.
type tableFunction struct {
	name   string
	render func(*flow.Bound, catalog.Location) (string, error)
}

// tableFunctions lists the table functions flow b gets.
func tableFunctions(b *flow.Bound) []tableFunction {
	if b.IsSnapshot() {
		// Its history is by version, not by ingestion time: no _at, no
		// _changes (docs/snapshot-flows.md).
		return nil
	}
	if b.Bitemporal {
		// A bitemporal target is time travel already: its as-of function
		// reads both axes.
		return []tableFunction{{catalog.AsOfFunctionName(b.Flow), render.AsOfFunction}}
	}
	return []tableFunction{
		{catalog.AtFunctionName(b.Flow), render.AtFunction},
		{catalog.ChangesFunctionName(b.Flow), render.ChangesFunction},
	}
}

// FunctionDDL renders the DDL of the table functions flow b gets (what
// apply runs, and bqcdc render prints).
func FunctionDDL(b *flow.Bound, loc catalog.Location) ([]NamedDDL, error) {
	fns := tableFunctions(b)
	var out []NamedDDL
	for _, fn := range fns {
		ddl, err := fn.render(b, loc)
		if err != nil {
			return nil, err
		}
		out = append(out, NamedDDL{fn.name, ddl})
	}
	return out, nil
}

func runDDL(ctx context.Context, bq *bigquery.Client, ddl string) error {
	job, err := bq.Query(ddl).Run(ctx)
	if err != nil {
		return err
	}
	status, err := job.Wait(ctx)
	if err != nil {
		return err
	}
	return status.Err()
}
