package apply

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/bqcdc/bqcdc/internal/progress"
)

// DefaultConcurrency bounds the objects All applies at once. Each object is
// a few sequential table metadata calls of a fraction of a second, so 8 at
// once make some tens of calls a second: well under BigQuery's 100 API
// requests per second per user and method, and the per-table limit on
// metadata updates (5 per 10 s) is never shared, as each call touches its
// own table.
const DefaultConcurrency = 8

// step applies one object (or a flow's pair) into its own report.
type step struct {
	objects int // report lines it adds, for the progress count
	run     func(rep *Report) error
}

// runSteps runs steps at most n at a time and appends their reports to rep
// in the order of steps, whatever order they finish in, so the report reads
// the same on every run. After a step fails no further step starts (those
// running finish); the error joins every failure, in step order.
func runSteps(steps []step, n int, meter *progress.Meter, rep *Report) error {
	reps := make([]Report, len(steps))
	err := forEach(len(steps), n, func(i int) error {
		defer meter.Add(steps[i].objects)
		return steps[i].run(&reps[i])
	})
	for _, r := range reps {
		*rep = append(*rep, r...)
	}
	return err
}

// forEach calls do(i) for each i in [0, count), at most n at a time (n <= 0:
// DefaultConcurrency). After a call fails no further call starts (those
// running finish); the error joins every failure, in index order.
func forEach(count, n int, do func(i int) error) error {
	if n <= 0 {
		n = DefaultConcurrency
	}
	errs := make([]error, count)
	var failed atomic.Bool
	var wg sync.WaitGroup
	slots := make(chan struct{}, n)
	for i := range count {
		slots <- struct{}{}
		if failed.Load() {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := do(i); err != nil {
				errs[i] = err
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
