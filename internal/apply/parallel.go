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
	if n <= 0 {
		n = DefaultConcurrency
	}
	reps := make([]Report, len(steps))
	errs := make([]error, len(steps))
	var failed atomic.Bool
	var wg sync.WaitGroup
	slots := make(chan struct{}, n)
	for i, s := range steps {
		slots <- struct{}{}
		if failed.Load() {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := s.run(&reps[i]); err != nil {
				errs[i] = err
				failed.Store(true)
			}
			meter.Add(s.objects)
		}()
	}
	wg.Wait()
	for _, r := range reps {
		*rep = append(*rep, r...)
	}
	return errors.Join(errs...)
}
