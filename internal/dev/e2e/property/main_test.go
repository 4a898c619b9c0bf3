// Package property holds the long-running property test of the views and
// compaction against the reference model, and the compaction benchmark. It
// is its own test binary (and so has its own 10-minute go test budget) with
// its own local stack.
package property

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/schema"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { testenv.Main(m, "property", "../testdata", &stack) }

var usersImage = schema.Columns{
	{Name: "userId", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "city", Type: schema.String},
	{Name: "operation", Type: schema.String}, {Name: "sequenceNum", Type: schema.Int64},
}
