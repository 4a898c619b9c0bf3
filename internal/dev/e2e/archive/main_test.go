// Package archive holds the integration tests of the archive of SCD 2
// histories (sql/render/archive.go) on the emulator: its own test binary
// with its own local stack, so its random rounds do not lengthen the
// folds binary past go test's ten minutes on two cores.
package archive

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { testenv.Main(m, "archive", "../testdata", &stack) }
