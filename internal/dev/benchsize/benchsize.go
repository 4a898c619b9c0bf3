// Package benchsize sizes benchmarks. Each benchmark has the size its
// figures are quoted at in the docs, and, under `go test -short`, a size
// that runs in seconds: CI runs every benchmark once that way (`.ci/run
// bench`: -short -bench . -benchtime 1x), so a benchmark that no longer
// runs fails CI instead of rotting until someone quotes it again. The
// figures stay in the docs, never pass/fail thresholds.
package benchsize

import (
	"flag"
	"testing"
)

// Pick returns full, or short under -short, unless the command line set
// the flag named flagName ("" for a size no flag sets): a size asked for
// wins.
func Pick[T any](full, short T, flagName string) T {
	if !testing.Short() || (flagName != "" && set(flagName)) {
		return full
	}
	return short
}

// set reports whether the command line set the flag.
func set(name string) bool {
	found := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}
