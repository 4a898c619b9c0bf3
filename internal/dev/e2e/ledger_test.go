package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/appends"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// TestLedgerTellsIdleFlows runs the append ledger end to end on the
// emulator: rows appended as ingest appends them (the source covered in
// _bqcdc_appends through the Storage Write API first), compaction's
// listing and ledger query. Flows the ledger shows quiet are idle without
// being bound; rows appended (covered) after that are folded by the next
// run, and the views stay exact throughout.
func TestLedgerTellsIdleFlows(t *testing.T) {
	e := testenv.New(t, stack, "ledger")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "c.sql", compactFlows, "c.users", testenv.UsersImage)
	var rep apply.Report
	if err := apply.Appends(ctx, e.BQ, e.Loc.DefaultDataset, &rep); err != nil {
		t.Fatal(err)
	}
	cfg := stack.BQConfig
	cfg.Project = e.Loc.Project
	lister, err := clients.NewTableLister(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Covers of a millisecond and a lag of a second: the test need not
	// wait out production's five-minute covers.
	ledger := appends.New(e.W, appends.Options{Window: time.Millisecond})
	const lag = time.Second
	c := compact.New(e.BQ, e.Loc, compact.Options{VisibilityLag: lag, Backoff: 20 * time.Millisecond, Reports: e.W,
		Ledger: true, Lister: lister, LedgerSettle: time.Nanosecond, MaintainEvery: -1})
	var flows []*flow.Flow
	for _, b := range bound {
		flows = append(flows, b.Flow)
	}
	ingest := func(rows ...map[string]any) {
		t.Helper()
		at := time.Now()
		for _, r := range rows {
			r["_cdc_ingested_at"] = at.UnixMicro()
		}
		if err := ledger.Cover(ctx, "c.users", at); err != nil {
			t.Fatal(err)
		}
		e.AppendRows(t, "c.users", rows)
	}
	run := func(when string, want string, idle int) {
		t.Helper()
		time.Sleep(lag + 100*time.Millisecond) // what was appended is past the visibility lag
		sel, refused, err := c.Prepare(ctx, flows, nil, 0, 1)
		if err != nil || refused != nil {
			t.Fatalf("%s: %v %v", when, err, refused)
		}
		if len(sel.Idle) != idle {
			t.Errorf("%s: %d flows idle from the ledger, want %d", when, len(sel.Idle), idle)
		}
		reports, err := c.Compact(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			if r.Outcome != want || r.Error != "" {
				t.Errorf("%s: %s %s (%s), want %s", when, r.Flow, r.Outcome, r.Error, want)
			}
		}
		e.CheckViews(t, bound, when)
	}

	ingest(userRow(1, "a", "INSERT", 1, "m1", time.Time{}), userRow(2, "b", "INSERT", 1, "m2", time.Time{}))
	run("first run", compact.Compacted, 0)
	run("second run", compact.UpToDate, 0) // confirms nothing came since: clean, with its reached mark
	run("third run", compact.Idle, len(flows))
	ingest(userRow(1, "c", "UPDATE", 2, "m3", time.Time{}), userRow(2, "", "DELETE", 2, "m4", time.Time{}))
	run("after new rows", compact.Compacted, 0)
}
