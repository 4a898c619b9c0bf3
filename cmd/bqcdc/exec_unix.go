//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

const exeSuffix = ""

// execDev replaces this process with the dev binary: same pid, so signals
// (Ctrl-C, a SIGTERM to `go run`'s child) and the exit status are the dev
// binary's own, and the standard streams are inherited.
func execDev(bin string, argv []string) error {
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		return fmt.Errorf("running %s: %w", bin, err)
	}
	return nil // not reached: Exec returns only on failure
}
