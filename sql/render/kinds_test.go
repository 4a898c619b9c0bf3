package render

import (
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// The tests of this package render flows of every kind. Production code
// finds a kind's view and shape in its plan (internal/plan, which imports
// this package, so its tests cannot); these say the same, and
// internal/plan's TestPlanMatchesRender checks that they do.

// testShape is the shape of b's target.
func testShape(b *flow.Bound) Shape {
	if b.Kind().History() {
		return History
	}
	return Current
}

// testView renders b's change-stream view with hint.
func testView(b *flow.Bound, loc catalog.Location, hint time.Time) (string, error) {
	switch b.Kind() {
	case flow.SCD2:
		return HistoryView(b, loc, hint)
	case flow.Bitemporal:
		return BitemporalView(b, loc, hint)
	}
	return CurrentView(b, loc, hint)
}
