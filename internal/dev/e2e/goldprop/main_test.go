// Package goldprop holds the property test of materialized views (gold
// flows) against the reference: random histories, compaction at random
// points with crashes after every kind of step. It is its own test binary,
// with its own local stack, 10-minute go test budget and emulator analyzer
// heap (internal/emulator, concession 13).
package goldprop

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { testenv.Main(m, "goldprop", "../testdata", &stack) }
