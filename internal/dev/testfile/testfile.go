// Package testfile reads the files tests compare against: a missing or
// unreadable file fails the test, with the path. It imports nothing of
// bqcdc's, so any test (Terraform's included) can use it without linking
// the emulator.
package testfile

import (
	"os"
	"testing"
)

// Read returns the file at path, failing t when it cannot be read.
func Read(t testing.TB, path string) string {
	t.Helper()
	return string(Bytes(t, path))
}

// Bytes returns the file at path, failing t when it cannot be read.
func Bytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
