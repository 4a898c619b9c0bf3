// Package goldviews tests materialized views (gold flows) of every kind
// against the reference on the emulator: the exact views, the refreshed
// tables, a repeated refresh, a changed definition and the descriptions.
// It is its own test binary, with its own local stack, go test budget and
// emulator analyzer heap (which every statement analysed grows:
// internal/emulator, concession 13; in internal/dev/e2e these statements
// took that binary past 2 GiB).
package goldviews

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { testenv.Main(m, "goldviews", "../testdata", &stack) }
