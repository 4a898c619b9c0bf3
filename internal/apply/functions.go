package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

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
	// labels are the view's labels that record the script once applied:
	// the hash, and the pruning bound where the functions read one.
	labels map[string]string
}

// newFunctionScript renders the flow's table functions with pruning bound
// hint (a committed watermark; see plan.FunctionsBounded).
func newFunctionScript(p *plan.Plan, hint time.Time) (functionScript, error) {
	ddls, err := p.Functions(hint)
	if err != nil || len(ddls) == 0 {
		return functionScript{}, err
	}
	h := sha256.New()
	for _, f := range ddls {
		h.Write([]byte(f.DDL))
	}
	s := functionScript{ddls: ddls, sum: hex.EncodeToString(h.Sum(nil))[:32]}
	s.labels = map[string]string{catalog.ViewFunctionsLabel: s.sum}
	if p.FunctionsBounded() {
		s.labels[catalog.FunctionsHintLabel] = catalog.MicrosLabel(hint)
	}
	return s, nil
}

// FunctionsRefresh is how far behind the view's pruning bound compaction
// lets the bound of the table functions fall (plan.FunctionsBounded):
// <target>_at then reads at most about a day of the changelog besides the
// state, for one DDL job a flow a day (rendering them at every run would
// double a run's jobs).
const FunctionsRefresh = 24 * time.Hour

// keptFunctionScript is the script apply wants of a view with labels, at
// the view's pruning bound hint: rendered with the bound the functions
// were made with when they read one, so that a second apply, after
// compaction advanced the view's bound, re-makes nothing; rendered with
// hint when it has to run anyway (the functions changed, or carry no
// bound yet).
func keptFunctionScript(p *plan.Plan, labels map[string]string, hint time.Time) (functionScript, error) {
	if made, ok := catalog.LabelMicros(labels[catalog.FunctionsHintLabel]); ok && p.FunctionsBounded() && made.Before(hint) {
		s, err := newFunctionScript(p, made)
		if err != nil || s.sum == labels[catalog.ViewFunctionsLabel] {
			return s, err
		}
	}
	return newFunctionScript(p, hint)
}

// refreshFunctions re-makes a flow's table functions that read a pruning
// bound with the view's bound hint, when apply made them (the view
// carries their hash) and their own bound is FunctionsRefresh behind, or
// ahead of hint (a state made again, whose watermark went back: the
// functions would miss what it has not folded yet); it returns the labels
// to record on the view (nil: nothing done).
func refreshFunctions(ctx context.Context, bq *bigquery.Client, p *plan.Plan, labels map[string]string, hint time.Time, rep *Report) (map[string]string, error) {
	if labels[catalog.ViewFunctionsLabel] == "" || !p.FunctionsBounded() {
		return nil, nil
	}
	if made, ok := catalog.LabelMicros(labels[catalog.FunctionsHintLabel]); ok && !made.After(hint) && hint.Sub(made) < FunctionsRefresh {
		return nil, nil
	}
	s, err := newFunctionScript(p, hint)
	if err != nil {
		return nil, err
	}
	if err := s.apply(ctx, bq, labels, p.Loc, p.Flow, rep); err != nil {
		return nil, err
	}
	return s.labels, nil
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
