package render

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/google/go-cmp/cmp"
)

// The status view of the test flows, against a golden copy.
func TestStatusGolden(t *testing.T) {
	var flows []*flow.Flow
	for _, b := range boundTestFlows(t) {
		flows = append(flows, b.Flow)
	}
	got, err := Status(flows, loc)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Status(flows, loc); again != got {
		t.Fatal("rendering twice gave different SQL")
	}
	path := filepath.Join("testdata", "golden", "_status.sql")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sql/render -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("SQL differs from %s (-want +got; go test ./sql/render -update rewrites it):\n%s", path, d)
	}
	if _, err := Status(nil, loc); err == nil {
		t.Error("a status view of no flow rendered")
	}
}
