package apply

import (
	"context"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/fakebq"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// TestTableFunctionsKeepTheirBound: the <target>_at of a target of versions
// reads the changelog after a pruning bound. apply makes it with the
// view's bound and keeps it: a second apply, after compaction advanced
// the view's bound, runs no job. Compaction's update of the view makes it
// again with the view's bound once its own is FunctionsRefresh behind,
// and not before, or at once when the view's bound went back (a state
// made again); a target of one row per key has no such bound and is
// never made again.
func TestTableFunctionsKeepTheirBound(t *testing.T) {
	ctx := context.Background()
	flows, schemas := scaleDeployment(t, 1)
	bq, counter := fakeClient(t, 0)
	bound, err := AllWith(ctx, bq, testTarget, flows, schemas, Options{Concurrency: 2}, &Report{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := func() int { return counter.take()["POST projects/"+fakebq.DefaultProject+"/jobs"] }
	labels := func(b *flow.Bound) map[string]string {
		t.Helper()
		_, md, err := viewMetadata(ctx, bq, testLoc, b)
		if err != nil {
			t.Fatal(err)
		}
		return md.Labels
	}
	jobs()
	var history, current *flow.Bound
	for _, b := range bound {
		if b.Kind().History() {
			history = b
		} else {
			current = b
		}
	}
	if history == nil || current == nil {
		t.Fatalf("want an SCD 1 and an SCD 2 flow, got %v", bound)
	}
	if _, ok := labels(current)[catalog.FunctionsHintLabel]; ok {
		t.Errorf("%s: its functions read no bound, yet carry %s", current.Target, catalog.FunctionsHintLabel)
	}

	w1 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	steps := []struct {
		hint      time.Time
		jobs      int
		functions time.Time // the bound the functions then carry
	}{
		{w1, 1, w1},                // the epoch is more than a day behind: made again
		{w1.Add(time.Hour), 0, w1}, // an hour behind: kept
		{w1.Add(FunctionsRefresh - time.Second), 0, w1},
		{w1.Add(FunctionsRefresh), 1, w1.Add(FunctionsRefresh)},
		// The state made again (its watermark went back): the functions
		// must not keep a bound past what it has folded.
		{w1.Add(time.Hour), 1, w1.Add(time.Hour)},
	}
	for _, s := range steps {
		reported := 0
		for _, b := range bound {
			n, err := View(ctx, bq, testLoc, b, s.hint, nil)
			if err != nil {
				t.Fatal(err)
			}
			reported += n
		}
		if n := jobs(); n != s.jobs || reported != n {
			t.Errorf("view bound %v: %d jobs (%d reported), want %d (the SCD 2 flow's functions only)", s.hint, n, reported, s.jobs)
		}
		if got := labels(history)[catalog.FunctionsHintLabel]; got != catalog.MicrosLabel(s.functions) {
			t.Errorf("view bound %v: the functions carry bound %s, want %s", s.hint, got, catalog.MicrosLabel(s.functions))
		}
		// A second apply keeps them, whatever the view's bound.
		var rep Report
		if _, err := AllWith(ctx, bq, testTarget, flows, schemas, Options{Concurrency: 2}, &rep); err != nil {
			t.Fatal(err)
		}
		if n := jobs(); n != 0 {
			t.Errorf("view bound %v: a second apply ran %d jobs:\n%v", s.hint, n, rep)
		}
	}
}
