package main

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/render/*/expected* from what bqcdc render writes")

// TestRenderCases: bqcdc render --out is the golden test of what a
// deployment will hold. Each folder of testdata/render (found by walking)
// holds flows/ and schemas/ (or an args file of render's flags, paths
// relative to cmd/bqcdc) and what render writes of them: expected/, one
// <flow>.sql per flow and materialized view (every object in the order
// apply makes it, table functions included), and expected.stderr with
// the exit status (refusals). go test ./cmd/bqcdc -run TestRenderCases
// -update rewrites them; review the diff as you would the SQL it shows.
func TestRenderCases(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "render", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no render cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out := t.TempDir()
			args := []string{"render", "--flows", filepath.Join(dir, "flows"), "--schemas", filepath.Join(dir, "schemas")}
			if b, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
				args = append([]string{"render"}, strings.Fields(string(b))...)
			}
			r := bqcdc(t, []string{"BQCDC_PROJECT="}, append(args, "--out", out)...)
			got := readFiles(t, out)
			for name := range got {
				if !strings.Contains(r.stdout, "wrote "+filepath.Join(out, name)+"\n") {
					t.Errorf("render wrote %s without saying so: %q", name, r.stdout)
				}
			}
			got["../expected.stderr"] = "exit " + string(rune('0'+r.code)) + "\n" + r.stderr
			want := filepath.Join(dir, "expected")
			if *update {
				writeFiles(t, want, got)
			}
			have := readFiles(t, want)
			have["../expected.stderr"] = readFile(t, filepath.Join(dir, "expected.stderr"))
			if a, b := slices.Sorted(maps.Keys(have)), slices.Sorted(maps.Keys(got)); !slices.Equal(a, b) {
				t.Errorf("render wrote %v, %s holds %v (go test ./cmd/bqcdc -run TestRenderCases -update)", b, want, a)
			}
			for name, text := range got {
				if w, ok := have[name]; ok && w != text {
					t.Errorf("%s differs from what render writes (go test ./cmd/bqcdc -run TestRenderCases -update, then review the diff); first difference at line %d",
						filepath.Join(want, name), firstDiff(w, text))
				}
			}
		})
	}
}

// readFiles reads the files of dir by name.
func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		out[e.Name()] = readFile(t, filepath.Join(dir, e.Name()))
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/bqcdc -run TestRenderCases -update writes it)", err)
	}
	return string(b)
}

// writeFiles makes dir hold exactly files (names relative to dir).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// firstDiff is the 1-based line at which a and b first differ.
func firstDiff(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
