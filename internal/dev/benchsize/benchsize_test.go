package benchsize

import (
	"flag"
	"testing"
)

var size = flag.Int("benchsize.n", 1000, "a size for the test")

func TestPick(t *testing.T) {
	got := Pick(*size, 10, "benchsize.n")
	want := 1000
	if testing.Short() {
		want = 10
	}
	if got != want {
		t.Errorf("Pick = %d, want %d (short: %v)", got, want, testing.Short())
	}
	if err := flag.Set("benchsize.n", "7"); err != nil {
		t.Fatal(err)
	}
	if got := Pick(*size, 10, "benchsize.n"); got != 7 {
		t.Errorf("Pick with the flag set = %d, want 7 (an explicit size wins)", got)
	}
}
