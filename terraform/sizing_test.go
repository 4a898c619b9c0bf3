package terraform_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sizingDefaults reads the optional(TYPE, DEFAULT) defaults of a sizing
// variable's object type (var.ingest, var.compact), by attribute name.
func sizingDefaults(t *testing.T, name string) map[string]string {
	t.Helper()
	root := config(t).module(t, ".")
	v := must(t, root.variables, name, "terraform/variables.tf has no variable "+name)
	typ := attrExpr(v.Body, "type")
	src := exprSource(root.fileOf(typ.Range()), typ)
	re := regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*optional\(\w+,\s*("?[^")]*"?)\)`)
	got := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		got[m[1]] = strings.Trim(m[2], `"`)
	}
	return got
}

// The sizing defaults are the ones terraform/README.md documents (its Sizing
// table), and the ingest concurrency is the one batching was measured at.
func TestSizingDefaultsDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := func(label string) []string {
		m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(label) + ` \| ([^|]+) \| ([^|]+) \|$`).FindSubmatch(readme)
		if m == nil {
			t.Fatalf("terraform/README.md: no Sizing row %q", label)
		}
		return []string{strings.TrimSpace(string(m[1])), strings.TrimSpace(string(m[2]))}
	}
	ingest, compact := sizingDefaults(t, "ingest"), sizingDefaults(t, "compact")
	for _, c := range []struct{ label, key, unit string }{
		{"concurrency", "max_request_concurrency", ""},
		{"vCPU", "cpu", ""},
		{"memory", "memory", ""},
		{"timeout", "timeout_seconds", " s"},
	} {
		want := []string{ingest[c.key] + c.unit, compact[c.key] + c.unit}
		if diff := cmp.Diff(want, row(c.label)); diff != "" {
			t.Errorf("Sizing row %q differs from the defaults in variables.tf (-variables.tf +README):\n%s", c.label, diff)
		}
	}
	want := []string{ingest["min_instance_count"] + "-" + ingest["max_instance_count"], compact["min_instance_count"] + "-" + compact["max_instance_count"]}
	if diff := cmp.Diff(want, row("instances")); diff != "" {
		t.Errorf("Sizing row \"instances\" differs from the defaults in variables.tf (-variables.tf +README):\n%s", diff)
	}
	// Batching makes high concurrency pay: 80 is where BenchmarkFunction
	// measured at most 0.1 appends per message (docs/performance.md).
	if got := ingest["max_request_concurrency"]; got != "80" {
		t.Errorf("ingest.max_request_concurrency defaults to %s, want 80", got)
	}
}

// The billing setting of a Cloud Run function lives on its Cloud Run service,
// which google_cloudfunctions2_function does not expose; the module must not
// pretend otherwise (for example with a local-exec gcloud call that Terraform
// neither tracks nor reverts). The README documents the manual step instead.
func TestNoFakedBillingSetting(t *testing.T) {
	cfg := config(t)
	for _, m := range cfg.modules {
		for _, f := range m.files {
			for _, bad := range []string{"local-exec", "run.googleapis.com/cpu-throttling", "cpu_idle", "null_resource", "terraform_data"} {
				if strings.Contains(string(f.src), bad) {
					t.Errorf("terraform/%s contains %q: the billing mode is a documented manual step (README, Billing mode)", f.path, bad)
				}
			}
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "--no-cpu-throttling") {
		t.Error("terraform/README.md does not document how to select instance-based billing (--no-cpu-throttling)")
	}
}
