package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
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
	script, err := newFunctionScript(b, loc)
	if err != nil {
		return err
	}
	if err := script.apply(ctx, bq, md.Labels, loc, b, rep); err != nil || md.Labels[catalog.ViewFunctionsLabel] == script.sum {
		return err
	}
	var upd bigquery.TableMetadataToUpdate
	keepLabels(&upd, md.Labels)
	upd.SetLabel(catalog.ViewFunctionsLabel, script.sum)
	if _, err := view.Update(ctx, upd, md.ETag); err != nil {
		return fmt.Errorf("labelling view %s with its functions: %w", b.Target, err)
	}
	return nil
}

// functionScript is the DDL of a flow's table functions and its hash (the
// value of catalog.ViewFunctionsLabel once applied); empty for a flow
// without functions.
type functionScript struct {
	ddls []plan.Function
	sum  string
}

func newFunctionScript(b *flow.Bound, loc catalog.Location) (functionScript, error) {
	ddls, err := plan.For(b, loc).Functions()
	if err != nil || len(ddls) == 0 {
		return functionScript{}, err
	}
	h := sha256.New()
	for _, f := range ddls {
		h.Write([]byte(f.DDL))
	}
	return functionScript{ddls: ddls, sum: hex.EncodeToString(h.Sum(nil))[:32]}, nil
}

// apply runs the script unless labels (the view's) say it was applied:
// every statement in one job (a script), so a flow's functions cost one
// jobs.insert and its wait however many there are. The caller labels the
// view with s.sum.
func (s functionScript) apply(ctx context.Context, bq *bigquery.Client, labels map[string]string, loc catalog.Location, b *flow.Bound, rep *Report) error {
	if len(s.ddls) == 0 {
		return nil
	}
	if labels[catalog.ViewFunctionsLabel] == s.sum {
		s.report(loc, b, rep, "unchanged")
		return nil
	}
	stmts := make([]string, len(s.ddls))
	names := make([]string, len(s.ddls))
	for i, f := range s.ddls {
		stmts[i] = strings.TrimSpace(f.DDL)
		names[i] = loc.Dataset(b.Flow) + "." + f.Name
	}
	if err := runDDL(ctx, bq, strings.Join(stmts, ScriptSeparator)+";"); err != nil {
		return fmt.Errorf("creating the table functions %s of flow %s: %w", strings.Join(names, ", "), b.Name, err)
	}
	s.report(loc, b, rep, "created or replaced")
	return nil
}

func (s functionScript) report(loc catalog.Location, b *flow.Bound, rep *Report, what string) {
	for _, f := range s.ddls {
		rep.add("table function %s.%s: %s", loc.Dataset(b.Flow), f.Name, what)
	}
}

// ScriptSeparator ends each statement of a script but the last (which ends
// with ";"): BigQuery parses a script whatever the spacing; the blank line
// is where the fake (internal/dev/fakebq) splits one.
const ScriptSeparator = ";\n\n"

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
