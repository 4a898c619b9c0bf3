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

// functionScript is the DDL of a flow's table functions and its hash (the
// value of catalog.ViewFunctionsLabel once applied); empty for a flow
// without functions. The functions (<target>_at, <target>_changes, or a
// bitemporal flow's <target>_as_of) are made with CREATE OR REPLACE TABLE
// FUNCTION (DDL costs nothing); they read the whole history, not the
// view's pruning bound, so compaction never rewrites them, and a column
// ingest adds reaches them at the next apply. What was applied is the hash
// in the view's label, compared rather than the routines themselves
// because the emulator does not implement routines.get (it answers an
// error the client retries): a second apply changes nothing and runs no job.
type functionScript struct {
	ddls []plan.Function
	sum  string
}

func newFunctionScript(p *plan.Plan) (functionScript, error) {
	ddls, err := p.Functions()
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
