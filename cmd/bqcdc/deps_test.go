package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoEmulator: the operator CLI, which scripts/deploy.sh and Cloud Build
// run with `go run ./cmd/bqcdc apply`, must not link the BigQuery emulator
// (a cold build of it takes minutes), nor the reference model, the view
// checker or any other dev package but the local command's options
// (issue 39): the commands that need them (local, loadgen) live in
// internal/dev/cmd/bqcdc-local.
func TestNoEmulator(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the dependencies with: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/bqcdc: %v", err)
	}
	var emulator []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/goccy/bigquery-emulator") {
			emulator = append(emulator, p)
		}
		if strings.HasPrefix(p, modulePath+"/internal/dev/") {
			t.Errorf("go list -deps ./cmd/bqcdc holds the dev package %s: the operator CLI carries what operators run", p)
		}
	}
	if len(emulator) > 0 {
		why, _ := exec.Command(goCmd, "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "-deps", ".").Output()
		var chain []string
		for _, l := range strings.Split(string(why), "\n") {
			pkg, imports, _ := strings.Cut(l, ": ")
			for _, imp := range strings.Fields(imports) {
				if strings.HasPrefix(pkg, "github.com/bqcdc/") && strings.HasPrefix(imp, "github.com/goccy/bigquery-emulator") {
					chain = append(chain, "  "+pkg+" imports "+imp)
				}
			}
		}
		t.Errorf("go list -deps ./cmd/bqcdc holds %d emulator packages (%s, ...); bqcdc packages importing one:\n%s",
			len(emulator), emulator[0], strings.Join(chain, "\n"))
	}
}
