package terraform_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/testfile"
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
		"go-bench":           {"args: ['.ci/run', 'bench']"},
		"render-sql":         {"args: ['.ci/run', 'render']"},
		"terraform-fmt":      {"'fmt', '-check', '-recursive'"},
		"terraform-init":     {"init -input=false", "-backend-config=bucket="},
		"terraform-validate": {"'validate'"},
		"terraform-plan":     {"'plan'", "'-out=bqcdc.tfplan'", "'-var-file=${_TF_VARS}'", "'-var=project_id=${PROJECT_ID}'"},
		"terraform-apply":    {"'apply'", "'-auto-approve'", "'bqcdc.tfplan'"},
		"go-live":            {`BQCDC_TEST_PROJECT=${_TEST_PROJECT}`, "args: ['.ci/run', 'live']"},
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
	for _, dep := range []string{"go-vet", "go-test", "go-race", "go-bench", "go-live", "render-sql", "terraform-fmt", "terraform-validate", "terraform-plan"} {
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
	ci := testfile.Read(t, filepath.Join("..", ".ci", "run"))
	for _, n := range []string{"go vet ./...", "go test -timeout 30m ./...", "go test -race", "go test -short -run '^$' -bench . -benchtime 1x ./...", "go run ./cmd/bqcdc render --out build/sql", "go test ./internal/dev/e2e/realbq -v -count=1 -timeout 30m", "live suite not run"} {
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
	bash := bashPath(t)
	for _, s := range []string{"deploy.sh", "teardown.sh", "smoke-test.sh", "extract-provider-schema.sh"} {
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
		if !strings.Contains(testfile.Read(t, path), "set -euo pipefail") {
			t.Errorf("scripts/%s must run with set -euo pipefail", s)
		}
	}

	const password = "pw-must-never-be-printed"
	env := append(os.Environ(), "BQCDC_REGISTRY_PASSWORD="+password, "BQCDC_PROJECT=", "BQCDC_REGION=", "BQCDC_DATASET=", "BQCDC_TFVARS=")
	run := func(script string, args ...string) (string, error) {
		return runScript(bash, env, script, args...)
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

// bashPath returns the path of bash, skipping the test where it is missing.
func bashPath(t *testing.T) string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	return bash
}

// runScript runs scripts/NAME with bash from the repository root, with env as
// its whole environment, and returns what it printed (stdout and stderr
// interleaved, as a terminal shows them).
func runScript(bash string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(bash, append([]string{filepath.Join("scripts", name)}, args...)...)
	cmd.Dir = ".."
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// scripts/smoke-test.sh --dry-run prints its plan and every command in
// order without credentials and without running any tool: terraform, go,
// gcloud and bq on the PATH are stubs that record a call and fail.
func TestSmokeTestDryRun(t *testing.T) {
	bash := bashPath(t)
	stubs := t.TempDir()
	called := filepath.Join(stubs, "called")
	for _, tool := range []string{"terraform", "go", "gcloud", "bq"} {
		stub := "#!/bin/sh\necho " + tool + " >> " + called + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(stubs, tool), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		// No credentials of any kind, and the stubs first on the PATH.
		env := []string{"PATH=" + stubs + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "CLOUDSDK_CONFIG=" + t.TempDir()}
		return runScript(bash, env, "smoke-test.sh", args...)
	}
	out, err := run("--dry-run", "--project", "demo-proj-1", "--region", "europe-west1", "--tables", "3")
	if err != nil {
		t.Fatalf("smoke-test.sh --dry-run: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(called); err == nil {
		t.Errorf("--dry-run ran tools: %s", b)
	}
	// Every step, in order.
	rest := out
	for _, want := range []string{
		"Plan of the smoke test",
		"+ go build -o ",
		"bqcdc loadgen --write ",
		"--tables 3 --messages 500 --keys 100",
		"+ terraform -chdir=terraform/examples/demo init -input=false",
		"+ terraform -chdir=terraform/examples/demo workspace new smoke-",
		"+ terraform -chdir=terraform/examples/demo apply -input=false -auto-approve -var-file=",
		"smoke.tfvars.json -var=project_id=demo-proj-1 -var=region=europe-west1 -var=location=US",
		"gcloud secrets versions access latest --project=demo-proj-1",
		"bqcdc apply --project demo-proj-1 --dataset bqcdc_smoke_",
		"bqcdc loadgen --project demo-proj-1 --dataset bqcdc_smoke_",
		"--rate 0 --wait 10m --check --json",
		"bqcdc compact --project demo-proj-1 --dataset bqcdc_smoke_",
		"bqcdc status --project demo-proj-1 --dataset bqcdc_smoke_",
		"--max-dead-letters 0 --max-compaction-age 30m",
		"+ bq query --project_id=demo-proj-1 --location=US",
		"INFORMATION_SCHEMA.JOBS_BY_PROJECT",
		"+ terraform -chdir=terraform/examples/demo destroy -input=false -auto-approve",
		"+ terraform -chdir=terraform/examples/demo workspace delete smoke-",
	} {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("smoke-test.sh --dry-run output lacks %q after the steps before it:\n%s", want, out)
		}
		rest = rest[i+len(want):]
	}
	// Every flag the script passes to bqcdc is one the command declares.
	checkBqcdcFlags(t, out)

	out, err = run("--dry-run", "--keep", "--project", "demo-proj-1", "--region", "europe-west1")
	if err != nil || strings.Contains(out, " destroy -input=false") || !strings.Contains(out, "kept for inspection (--keep)") {
		t.Errorf("smoke-test.sh --dry-run --keep must not destroy: err=%v\n%s", err, out)
	}
	if out, err := run("--dry-run", "--region", "europe-west1"); err == nil || !strings.Contains(out, "missing required --project") {
		t.Errorf("smoke-test.sh without --project: err=%v, output:\n%s", err, out)
	}
	if out, err := run("--dry-run", "--project", "demo-proj-1", "--region", "europe-west1", "--wait", "soon"); err == nil || !strings.Contains(out, "--wait 'soon' is not a duration") {
		t.Errorf("smoke-test.sh --wait soon: err=%v, output:\n%s", err, out)
	}
}

// checkBqcdcFlags checks that every `bqcdc <command> --flag` in a script's
// printed commands is a flag cmd/bqcdc registers for that command (read
// from its source: fs.String("name", ...) and friends, and the target flags).
func checkBqcdcFlags(t *testing.T, out string) {
	t.Helper()
	declared := map[string]map[string]bool{}
	decl := regexp.MustCompile(`fs\.(?:String|Int|Int64|Bool|Duration|Float64)(?:Var)?\((?:&[\w.]+, )?"([a-z-]+)"|fs\.Var\(&\w+, "([a-z-]+)"`)
	files, _ := filepath.Glob(filepath.Join("..", "cmd", "bqcdc", "*.go"))
	// loadgen's own flags are registered by loadgen.Command, and the target
	// flags by config.Target (both shared with the dev binary's loadgen).
	files = append(files, filepath.Join("..", "internal", "loadgen", "command.go"), filepath.Join("..", "internal", "config", "target.go"))
	target := map[string]bool{}
	for _, f := range files {
		src := testfile.Read(t, f)
		for _, fn := range regexp.MustCompile(`(?m)^func (?:\([^)]*\) )?(\w+)\(`).FindAllStringSubmatchIndex(src, -1) {
			name := src[fn[2]:fn[3]]
			body := src[fn[1]:]
			if end := strings.Index(body, "\n}\n"); end >= 0 {
				body = body[:end]
			}
			flags := map[string]bool{}
			for _, m := range decl.FindAllStringSubmatch(body, -1) {
				flags[m[1]+m[2]] = true
			}
			switch {
			case name == "Register" && strings.HasSuffix(f, "target.go"):
				target = flags
				continue
			case name == "Register" && strings.HasSuffix(f, "command.go"):
				for k := range flags {
					if declared["loadgen"] == nil {
						declared["loadgen"] = map[string]bool{}
					}
					declared["loadgen"][k] = true
				}
				continue
			}
			if cmd, ok := strings.CutPrefix(name, "run"); ok && cmd != "" {
				declared[strings.ToLower(cmd)] = flags
			}
		}
	}
	if len(target) < 5 || len(declared["loadgen"]) < 5 {
		t.Fatalf("could not read cmd/bqcdc's flags (target %v, loadgen %v)", target, declared["loadgen"])
	}
	uses := 0
	for _, line := range strings.Split(out, "\n") {
		m := regexp.MustCompile(`/bqcdc (\w+) (.*)`).FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cmd := m[1]
		if declared[cmd] == nil {
			t.Errorf("the script runs bqcdc %s, which cmd/bqcdc does not define: %s", cmd, line)
			continue
		}
		for _, f := range regexp.MustCompile(`(?:^| )--([a-z-]+)`).FindAllStringSubmatch(m[2], -1) {
			uses++
			if !declared[cmd][f[1]] && !target[f[1]] {
				t.Errorf("the script passes --%s to bqcdc %s, which does not declare it: %s", f[1], cmd, line)
			}
		}
	}
	if uses < 20 {
		t.Errorf("checked only %d bqcdc flags in the script's commands", uses)
	}
}
