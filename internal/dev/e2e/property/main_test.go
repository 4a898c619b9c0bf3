// Package property holds the long-running property test of the views and
// compaction against the reference model, and the compaction benchmark. It
// is its own test binary (and so has its own 10-minute go test budget) with
// its own local stack.
package property

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { testenv.Main(m, "property", "../testdata", &stack) }
