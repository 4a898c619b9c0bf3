package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/render/*/expected.* from what bqcdc render prints")

// TestRenderCases: bqcdc render's output is the golden test of what a
// deployment will hold. Each folder of testdata/render (found by walking)
// holds flows/ and schemas/ (or an args file of render's flags, paths
// relative to cmd/bqcdc) and what render prints of them:
// expected.sql (stdout) and expected.stderr with the exit status
// (refusals). go test ./cmd/bqcdc -run TestRenderCases -update rewrites
// them; review the diff as you would the SQL it shows.
func TestRenderCases(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "render", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no render cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := []string{"render", "--flows", filepath.Join(dir, "flows"), "--schemas", filepath.Join(dir, "schemas")}
			if b, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
				args = append([]string{"render"}, strings.Fields(string(b))...)
			}
			r := bqcdc(t, []string{"BQCDC_PROJECT="}, args...)
			got := map[string]string{"expected.sql": r.stdout, "expected.stderr": "exit " + string(rune('0'+r.code)) + "\n" + r.stderr}
			for name, text := range got {
				path := filepath.Join(dir, name)
				if *update {
					if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go test ./cmd/bqcdc -run TestRenderCases -update writes it)", err)
				}
				if string(want) != text {
					t.Errorf("%s differs from what render prints (go test ./cmd/bqcdc -run TestRenderCases -update, then review the diff); first difference at line %d", path, firstDiff(string(want), text))
				}
			}
		})
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
