package terraform_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// `terraform validate` cannot run here (no Google provider), so these checks
// cover the part of it that needs no provider schema: layout, references to
// variables/locals/resources/modules, and module call arguments.

// Every module follows the main/variables/outputs/versions layout, and each
// reusable module names its primary resource "main".
func TestModuleLayout(t *testing.T) {
	cfg := config(t)
	want := []string{".", "examples/demo", "modules/dataset", "modules/function", "modules/scheduler", "modules/source"}
	if diff := cmp.Diff(want, cfg.sortedDirs()); diff != "" {
		t.Errorf("module directories under terraform/ (-want +got):\n%s", diff)
	}
	for _, dir := range cfg.sortedDirs() {
		for _, f := range []string{"main.tf", "variables.tf", "outputs.tf", "versions.tf"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("terraform/%s has no %s", dir, f)
			}
		}
		m := cfg.modules[dir]
		if !strings.HasPrefix(dir, "modules") {
			continue
		}
		hasMain := false
		for key := range m.resources {
			hasMain = hasMain || strings.HasSuffix(key, ".main")
		}
		if !hasMain {
			t.Errorf("terraform/%s: the primary resource should be named \"main\"", dir)
		}
	}
}

// Every reference resolves inside its module: var.X, local.X, data.T.N, T.N
// and module.X.OUTPUT. The from address of a moved block names what no
// longer exists, and is not checked.
func TestReferencesResolve(t *testing.T) {
	cfg := config(t)
	checked := 0
	for _, dir := range cfg.sortedDirs() {
		m := cfg.modules[dir]
		for _, f := range m.files {
			var movedFrom []hcl.Range
			for _, b := range f.body.Blocks {
				if a := b.Body.Attributes["from"]; b.Type == "moved" && a != nil {
					movedFrom = append(movedFrom, a.Expr.Range())
				}
			}
			hclsyntax.VisitAll(f.body, func(node hclsyntax.Node) hcl.Diagnostics {
				if e, ok := node.(*hclsyntax.ScopeTraversalExpr); ok {
					for _, r := range movedFrom {
						if r.Overlaps(e.SrcRange) {
							return nil
						}
					}
					checked++
					if msg := cfg.unresolved(m, e.Traversal); msg != "" {
						t.Errorf("%s: %s", e.SrcRange, msg)
					}
				}
				return nil
			})
		}
	}
	if checked < 100 {
		t.Errorf("checked only %d references", checked)
	}
}

// unresolved explains why a traversal does not resolve in m ("" if it does).
func (c *tfConfig) unresolved(m *tfModule, tr hcl.Traversal) string {
	attr := func(i int) string {
		if i < len(tr) {
			if a, ok := tr[i].(hcl.TraverseAttr); ok {
				return a.Name
			}
		}
		return ""
	}
	ref := traversalString(tr)
	switch root := tr.RootName(); {
	case root == "var":
		if m.variables[attr(1)] == nil {
			return ref + ": no variable " + attr(1)
		}
	case root == "local":
		if m.locals[attr(1)] == nil {
			return ref + ": no local " + attr(1)
		}
	case root == "data":
		if m.data[attr(1)+"."+attr(2)] == nil {
			return ref + ": no data source " + attr(1) + "." + attr(2)
		}
	case root == "module":
		call := m.calls[attr(1)]
		if call == nil {
			return ref + ": no module call " + attr(1)
		}
		// module.NAME[key].OUTPUT or module.NAME.OUTPUT
		i := 2
		for i < len(tr) {
			if _, ok := tr[i].(hcl.TraverseIndex); !ok {
				break
			}
			i++
		}
		out := attr(i)
		if out == "" {
			return ""
		}
		if target := c.callTarget(m, call); target != nil && target.outputs[out] == nil {
			return ref + ": module " + target.dir + " has no output " + out
		}
	case strings.HasPrefix(root, "google_") || strings.HasPrefix(root, "archive_"):
		if m.resources[root+"."+attr(1)] == nil {
			return ref + ": no resource " + root + "." + attr(1)
		}
	}
	return ""
}

// callTarget returns the local module a call sources, or nil.
func (c *tfConfig) callTarget(m *tfModule, call *hclsyntax.Block) *tfModule {
	src, ok := literalString(attrExpr(call.Body, "source"))
	if !ok || !(strings.HasPrefix(src, "./") || strings.HasPrefix(src, "../")) {
		return nil
	}
	return c.modules[filepath.Clean(filepath.Join(m.dir, src))]
}

// Module calls pass only variables the module declares, and all it requires.
func TestModuleCallArguments(t *testing.T) {
	cfg := config(t)
	meta := map[string]bool{"source": true, "version": true, "for_each": true, "count": true, "depends_on": true, "providers": true}
	calls := 0
	for _, dir := range cfg.sortedDirs() {
		m := cfg.modules[dir]
		for name, call := range m.calls {
			target := cfg.callTarget(m, call)
			if target == nil {
				t.Errorf("%s: module %q must use a local source that exists under terraform/", call.DefRange(), name)
				continue
			}
			calls++
			for arg := range call.Body.Attributes {
				if !meta[arg] && target.variables[arg] == nil {
					t.Errorf("%s: module %q passes %s, which %s does not declare", call.DefRange(), name, arg, target.dir)
				}
			}
			for v, decl := range target.variables {
				if decl.Body.Attributes["default"] == nil && call.Body.Attributes[v] == nil {
					t.Errorf("%s: module %q does not pass required variable %s of %s", call.DefRange(), name, v, target.dir)
				}
			}
		}
	}
	if calls < 5 {
		t.Errorf("checked only %d module calls", calls)
	}
}

// The root module (and the demo) expose what operators and scripts need.
func TestOutputs(t *testing.T) {
	cfg := config(t)
	want := []string{
		"compact_function_name", "compact_function_uri", "dataset_id", "dead_letter_subscription_ids",
		"dead_letter_topic_ids", "ingest_function_name", "ingest_function_uri", "ingest_service_name", "location",
		"registry_password_secret_id", "registry_url_secret_id", "registry_username_secret_id", "replay_key_secret_id", "dead_letter_retention_days",
		"scheduler_job_name", "subscription_ids", "topic_ids",
	}
	for _, dir := range []string{".", "examples/demo"} {
		m := cfg.module(t, dir)
		for _, o := range want {
			if m.outputs[o] == nil {
				t.Errorf("terraform/%s has no output %q", dir, o)
			}
		}
		for name, o := range m.outputs {
			if d, ok := literalString(attrExpr(o.Body, "description")); !ok || d == "" {
				t.Errorf("%s: output %q has no description", o.DefRange(), name)
			}
		}
	}
}

// The reference checker itself reports what it should.
func TestReferenceCheckerFires(t *testing.T) {
	f := parseSnippet(t, `
variable "a" {
  type        = string
  description = "x"
}
resource "google_pubsub_topic" "main" {
  name    = var.a
  labels  = var.missing
  project = google_pubsub_topic.other.project
}
`)
	m := newModule(".")
	m.add(f)
	cfg := &tfConfig{modules: map[string]*tfModule{".": m}}
	var problems []string
	hclsyntax.VisitAll(f.body, func(node hclsyntax.Node) hcl.Diagnostics {
		if e, ok := node.(*hclsyntax.ScopeTraversalExpr); ok {
			if msg := cfg.unresolved(m, e.Traversal); msg != "" {
				problems = append(problems, msg)
			}
		}
		return nil
	})
	sort.Strings(problems) // attribute order is map order
	want := []string{"google_pubsub_topic.other.project: no resource google_pubsub_topic.other", "var.missing: no variable missing"}
	if diff := cmp.Diff(want, problems); diff != "" {
		t.Errorf("reference checker on a bad snippet (-want +got):\n%s", diff)
	}
}
