package render

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// Past StatusMaxChangelogs flows the status view names no changelog (so it
// stays within BigQuery's 1,000 tables per query): 2,000 flows over 2,000
// sources read the report and dead-letter tables only, in well under 1 MB
// of SQL.
func TestStatusBeyondTheTableLimit(t *testing.T) {
	var src strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&src, "CREATE FLOW f%04d AS AUTO CDC INTO t%04d FROM STREAM(`db.shop.t%04d`) KEYS (id) SEQUENCE BY s;\n", i, i, i)
	}
	flows, err := flow.Parse("many.sql", src.String())
	if err != nil {
		t.Fatal(err)
	}
	sql, err := Status(flows, loc)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(sql, "_changelog`"); n != 0 {
		t.Errorf("the status view of 2,000 flows names %d changelogs", n)
	}
	tables := map[string]bool{}
	for _, m := range regexp.MustCompile("`[^`]+`\\.`[^`]+`\\.`[^`]+`").FindAllString(sql, -1) {
		tables[m] = true
	}
	if len(tables) != 2 {
		t.Errorf("the status view of 2,000 flows reads %d tables, want 2 (runs, dead letters): %v", len(tables), tables)
	}
	if len(sql) > 400<<10 {
		t.Errorf("the status view of 2,000 flows is %d bytes of SQL", len(sql))
	}
	few, err := Status(flows[:10], loc)
	if err != nil || !strings.Contains(few, "_changelog`") {
		t.Errorf("10 flows: the status view reads no changelog (%v)", err)
	}
}
