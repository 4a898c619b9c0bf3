package terraform_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Checks of cloudbuild.yaml and scripts/*.sh, the other half of the
// deployment layer. cloudbuild.yaml is read line by line (the file keeps one
// fixed layout: "  - id:" opens a step, waitFor is a flow list).

type buildStep struct {
	id, name string
	waitFor  []string
	text     string
}

func readCloudBuild(t *testing.T) (steps []*buildStep, subs map[string]bool, src string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cloudbuild.yaml"))
	if err != nil {
		t.Fatalf("reading cloudbuild.yaml: %v", err)
	}
	src = string(b)
	subs = map[string]bool{}
	section := ""
	var cur *buildStep
	waitFor := regexp.MustCompile(`^    waitFor: \[(.*)\]$`)
	for _, line := range strings.Split(src, "\n") {
		if line != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#") {
			section = strings.TrimSuffix(line, ":")
			continue
		}
		switch section {
		case "substitutions":
			if m := regexp.MustCompile(`^  (_[A-Z0-9_]+): `).FindStringSubmatch(line); m != nil {
				subs[m[1]] = true
			}
		case "steps":
			if strings.HasPrefix(line, "  - ") {
				id, ok := strings.CutPrefix(line, "  - id: ")
				if !ok {
					t.Errorf("cloudbuild.yaml: every step must start with its id, got %q", line)
				}
				cur = &buildStep{id: id}
				steps = append(steps, cur)
			}
			if cur == nil {
				continue
			}
			cur.text += line + "\n"
			if name, ok := strings.CutPrefix(line, "    name: "); ok {
				cur.name = name
			}
			if m := waitFor.FindStringSubmatch(line); m != nil {
				for _, w := range strings.Split(m[1], ",") {
					cur.waitFor = append(cur.waitFor, strings.Trim(strings.TrimSpace(w), `'"`))
				}
			}
		}
	}
	return steps, subs, src
}

func TestCloudBuildGraph(t *testing.T) {
	steps, subs, src := readCloudBuild(t)
	byID := map[string]*buildStep{}
	for _, s := range steps {
		if byID[s.id] != nil {
			t.Errorf("step id %q is used twice", s.id)
		}
		if s.name == "" || len(s.waitFor) == 0 {
			t.Errorf("step %q needs a name and an explicit waitFor", s.id)
		}
		for _, w := range s.waitFor {
			if w != "-" && byID[w] == nil {
				t.Errorf("step %q waits for %q, which is not an earlier step", s.id, w)
			}
		}
		byID[s.id] = s
	}

	want := map[string][]string{ // step -> what its text must contain
		"go-vet":             {"args: ['.ci/run', 'vet']"},
		"go-test":            {"args: ['.ci/run', 'test']"},
		"go-race":            {"args: ['.ci/run', 'race']"},
		"render-sql":         {"args: ['.ci/run', 'render']"},
		"terraform-fmt":      {"'fmt', '-check', '-recursive'"},
		"terraform-init":     {"init -input=false", "-backend-config=bucket="},
		"terraform-validate": {"'validate'"},
		"terraform-apply":    {"'apply'", "'-auto-approve'", "'-var-file=${_TF_VARS}'"},
		"bqcdc-apply":        {"go run ./cmd/bqcdc apply", "--flows sql/flows", "--schemas schemas", `"$$BQCDC_REGISTRY_URL"`},
	}
	for id, needles := range want {
		s := byID[id]
		if s == nil {
			t.Errorf("cloudbuild.yaml has no step %q", id)
			continue
		}
		for _, n := range needles {
			if !strings.Contains(s.text, n) {
				t.Errorf("step %q should contain %q", id, n)
			}
		}
	}
	if t.Failed() {
		return
	}

	// Deploy only after every check; create tables only after the deploy.
	after := func(id, dep string) bool {
		var visit func(string) bool
		visit = func(s string) bool {
			for _, w := range byID[s].waitFor {
				if w == dep || (w != "-" && visit(w)) {
					return true
				}
			}
			return false
		}
		return visit(id)
	}
	for _, dep := range []string{"go-vet", "go-test", "go-race", "render-sql", "terraform-fmt", "terraform-validate"} {
		if !after("terraform-apply", dep) {
			t.Errorf("terraform-apply must wait (directly or not) for %s", dep)
		}
	}
	if !after("bqcdc-apply", "terraform-apply") {
		t.Error("bqcdc-apply must wait for terraform-apply (the dataset must exist)")
	}

	for _, s := range steps {
		switch {
		case strings.HasPrefix(s.name, "golang:"):
			if s.name != "golang:1.26" {
				t.Errorf("step %q uses %s; the module needs Go 1.26 (golang:1.26)", s.id, s.name)
			}
		case strings.HasPrefix(s.name, "hashicorp/terraform:"):
			if !regexp.MustCompile(`^hashicorp/terraform:\d+\.\d+\.\d+$`).MatchString(s.name) {
				t.Errorf("step %q: pin the terraform image to a version, got %s", s.id, s.name)
			}
		default:
			t.Errorf("step %q uses an unexpected image %s", s.id, s.name)
		}
	}

	// The tests are defined once, in .ci/run: Cloud Build runs each of its
	// steps (and no test command of its own), so CI and the deploy pipeline
	// test the same things.
	ci := readFile(t, filepath.Join("..", ".ci", "run"))
	for _, n := range []string{"go vet ./...", "go test ./...", "go test -race", "go run ./cmd/bqcdc render --out build/sql"} {
		if !strings.Contains(ci, n) {
			t.Errorf(".ci/run should contain %q", n)
		}
	}
	m := regexp.MustCompile(`(?m)^\[\[ \$\{#steps\[@\]\} -gt 0 \]\] \|\| steps=\(([a-z ]+)\)$`).FindStringSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run: no default step list (steps=(...)) found")
	}
	var ran []string
	for _, s := range steps {
		if c := regexp.MustCompile(`args: \['\.ci/run', '([a-z]+)'\]`).FindStringSubmatch(s.text); c != nil {
			ran = append(ran, c[1])
		}
		if strings.Contains(s.text, "go test") || strings.Contains(s.text, "go vet") {
			t.Errorf("step %q runs a test command of its own; add it to .ci/run instead", s.id)
		}
	}
	if diff := cmp.Diff(strings.Fields(m[1]), ran); diff != "" {
		t.Errorf("the .ci/run steps cloudbuild.yaml runs (-.ci/run +cloudbuild.yaml):\n%s", diff)
	}

	// Substitutions: every one used is declared (with a default) and every
	// declared one is used.
	body := src[strings.Index(src, "\nsteps:"):]
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{?(_[A-Z0-9_]+)`).FindAllStringSubmatch(body, -1) {
		used[m[1]] = true
	}
	if diff := cmp.Diff(subs, used); diff != "" {
		t.Errorf("substitutions declared vs used (-declared +used):\n%s", diff)
	}

	for i, line := range strings.Split(src, "\n") {
		if strings.Contains(line, "set -x") || (strings.Contains(line, "echo") && strings.Contains(line, "REGISTRY")) {
			t.Errorf("cloudbuild.yaml:%d may print a secret: %s", i+1, line)
		}
	}
}

// The scripts parse, are executable and behave in --dry-run mode.
func TestScripts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	for _, s := range []string{"deploy.sh", "teardown.sh"} {
		path := filepath.Join("..", "scripts", s)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("scripts/%s: %v", s, err)
		}
		if info.Mode().Perm()&0o111 == 0 {
			t.Errorf("scripts/%s is not executable", s)
		}
		if out, err := exec.Command(bash, "-n", path).CombinedOutput(); err != nil {
			t.Errorf("bash -n scripts/%s: %v\n%s", s, err, out)
		}
		if !strings.Contains(readFile(t, path), "set -euo pipefail") {
			t.Errorf("scripts/%s must run with set -euo pipefail", s)
		}
	}

	const password = "pw-must-never-be-printed"
	run := func(script string, args ...string) (string, error) {
		cmd := exec.Command(bash, append([]string{filepath.Join("scripts", script)}, args...)...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "BQCDC_REGISTRY_PASSWORD="+password, "BQCDC_PROJECT=", "BQCDC_REGION=", "BQCDC_DATASET=", "BQCDC_TFVARS=")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	common := []string{"--project", "demo-proj-1", "--region", "europe-west1", "--dataset", "cdc_demo", "--tfvars", "terraform/examples/demo/terraform.tfvars"}

	override := filepath.Join("examples", "demo", "backend_override.tf")
	_, statErr := os.Stat(override)
	hadOverride := statErr == nil // a real deploy may have written one
	out, err := run("deploy.sh", append([]string{"--dry-run", "--state-bucket", "tf-state"}, common...)...)
	if err != nil {
		t.Fatalf("deploy.sh --dry-run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"+ terraform -chdir=terraform/examples/demo init -input=false -backend-config=bucket=tf-state",
		"+ terraform -chdir=terraform/examples/demo apply -input=false -var-file=",
		"-var=project_id=demo-proj-1 -var=region=europe-west1 -var=dataset_id=cdc_demo -var=location=US",
		"+ go run ./cmd/bqcdc apply --project demo-proj-1 --dataset cdc_demo --location US --flows sql/flows --schemas schemas --registry-url",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("deploy.sh --dry-run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, password) {
		t.Error("deploy.sh printed the registry password")
	}
	if _, err := os.Stat(override); err == nil && !hadOverride {
		t.Error("deploy.sh --dry-run wrote backend_override.tf")
	}

	if out, err := run("deploy.sh", "--dry-run", "--region", "europe-west1"); err == nil || !strings.Contains(out, "missing required --project --dataset --tfvars") {
		t.Errorf("deploy.sh without required flags: err=%v, output:\n%s", err, out)
	}

	out, err = run("teardown.sh", append([]string{"--dry-run"}, common...)...)
	if err != nil || !strings.Contains(out, "state rm module.bqcdc.module.dataset module.bqcdc.google_bigquery_table.dead_letters") ||
		!strings.Contains(out, " destroy -input=false -auto-approve") || strings.Contains(out, "delete_contents_on_destroy=true") {
		t.Errorf("teardown.sh --dry-run should keep the dataset and destroy the rest: err=%v\n%s", err, out)
	}
	out, err = run("teardown.sh", append([]string{"--dry-run", "--yes", "--delete-data"}, common...)...)
	if err != nil || !strings.Contains(out, "-var=delete_contents_on_destroy=true -var=deletion_protection=false") || strings.Contains(out, "state rm") {
		t.Errorf("teardown.sh --delete-data --dry-run should delete the dataset through Terraform: err=%v\n%s", err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
