package testenv

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// InjectedCrash is the error text of a crash a test's AfterStep injects.
const InjectedCrash = "injected crash"

// CompactCrashing runs compaction with opts, whose AfterStep may fail with
// InjectedCrash after step crashAt (none when empty): only that failure is
// allowed. It checks the views then and, after a crash, re-runs compaction
// without AfterStep one second later than now, which must not fail, and
// checks them again.
func (e *Env) CompactCrashing(t testing.TB, opts compact.Options, bound []*flow.Bound, now time.Time, crashAt, when string, check func(when string)) {
	t.Helper()
	for _, rep := range compact.New(e.BQ, e.Loc, opts).Run(context.Background(), bound) {
		if rep.Outcome == compact.Failed && !strings.Contains(rep.Error, InjectedCrash) {
			t.Fatalf("%s: compaction of %s failed: %s", when, rep.Flow, rep.Error)
		}
	}
	check(fmt.Sprintf("%s, after compaction (crash after %q)", when, crashAt))
	if crashAt == "" {
		return
	}
	opts.AfterStep = nil
	opts.Now = func() time.Time { return now.Add(time.Second) }
	for _, rep := range compact.New(e.BQ, e.Loc, opts).Run(context.Background(), bound) {
		if rep.Outcome == compact.Failed {
			t.Fatalf("%s: re-run of %s after the crash failed: %s", when, rep.Flow, rep.Error)
		}
	}
	check(fmt.Sprintf("%s, after re-running the crashed compaction", when))
}

// CrashingSteps is the AfterStep of a property test's compaction run (see
// CompactCrashing): after the fold step it calls late once, when set, to
// append rows the run did not read; after each step, half the time (as r
// draws), it calls check; after step crashAt it fails with InjectedCrash.
func CrashingSteps(r *rand.Rand, crashAt string, late func(), check func(flowName, step string)) func(flowName, step string) error {
	return func(flowName, step string) error {
		if late != nil && step == compact.StepFold {
			late()
			late = nil
		}
		if r.Intn(2) == 0 {
			check(flowName, step)
		}
		if step == crashAt {
			return errors.New(InjectedCrash)
		}
		return nil
	}
}

// CompactAt runs compaction of bound with opts at the clock now (a
// visibility lag of a second and a short backoff unless opts set them) and
// fails the test if a flow's run fails; it returns the reports.
func (e *Env) CompactAt(t testing.TB, bound []*flow.Bound, now time.Time, opts compact.Options) []compact.Report {
	t.Helper()
	if opts.VisibilityLag == 0 {
		opts.VisibilityLag = time.Second
	}
	if opts.Backoff == 0 {
		opts.Backoff = 20 * time.Millisecond
	}
	opts.Now = func() time.Time { return now }
	reports := compact.New(e.BQ, e.Loc, opts).Run(context.Background(), bound)
	for _, r := range reports {
		if r.Error != "" {
			t.Fatalf("compaction of %s: %s", r.Flow, r.Error)
		}
	}
	return reports
}
