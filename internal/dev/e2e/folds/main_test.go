// Package folds holds the integration tests of what the views, the change
// feeds and the bitemporal targets fold to (the acceptance scenarios,
// time travel, bitemporal corrections and in-order keys, the upgrade from
// generations) on the emulator. It is its own test binary with its own
// local stack: the emulator's SQL analyzer (go-googlesql, WASM) keeps what
// it analyzes, and the e2e binary with these tests in it grew it past its
// 2 GiB and died (internal/emulator, concession 11).
package folds

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { testenv.Main(m, "folds", "../testdata", &stack) }
