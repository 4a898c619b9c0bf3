package terraform_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// This file loads the Terraform configuration under terraform/ with the HCL
// parser (no terraform binary, no provider schema) into a small model of
// modules, and holds the expression helpers the checks share.

// tfFile is one parsed .tf or .tfvars file.
type tfFile struct {
	path string
	src  []byte
	body *hclsyntax.Body
}

// tfModule is the top-level content of one directory of .tf files.
type tfModule struct {
	dir       string
	files     []*tfFile
	variables map[string]*hclsyntax.Block // by name
	outputs   map[string]*hclsyntax.Block
	locals    map[string]*hclsyntax.Attribute
	resources map[string]*hclsyntax.Block // by "type.name"
	data      map[string]*hclsyntax.Block // by "type.name"
	calls     map[string]*hclsyntax.Block // module calls, by name
}

// tfConfig is every module and every .tfvars file under terraform/.
type tfConfig struct {
	modules map[string]*tfModule // by directory relative to terraform/ ("." is the root module)
	tfvars  []*tfFile
}

var (
	loadOnce  sync.Once
	loaded    *tfConfig
	loadError string
)

// config parses terraform/ once per test binary; the test runs in terraform/.
func config(t *testing.T) *tfConfig {
	t.Helper()
	loadOnce.Do(func() { loaded, loadError = loadConfig(".") })
	if loadError != "" {
		t.Fatal(loadError)
	}
	return loaded
}

func loadConfig(root string) (*tfConfig, string) {
	cfg := &tfConfig{modules: map[string]*tfModule{}}
	parser := hclparse.NewParser()
	var problems []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".terraform" || d.Name() == ".build") {
			return filepath.SkipDir
		}
		isTF, isVars := strings.HasSuffix(p, ".tf"), strings.HasSuffix(p, ".tfvars")
		// *_override.tf files (backend_override.tf) are written at deploy time.
		if d.IsDir() || !(isTF || isVars) || strings.HasSuffix(p, "_override.tf") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, diags := parser.ParseHCL(src, p)
		if diags.HasErrors() {
			problems = append(problems, diags.Error())
			return nil
		}
		file := &tfFile{path: p, src: src, body: f.Body.(*hclsyntax.Body)}
		if isVars {
			cfg.tfvars = append(cfg.tfvars, file)
			return nil
		}
		dir := filepath.Dir(p)
		m := cfg.modules[dir]
		if m == nil {
			m = newModule(dir)
			cfg.modules[dir] = m
		}
		m.add(file)
		return nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(cfg.modules) == 0 {
		problems = append(problems, "no .tf files found under terraform/")
	}
	return cfg, strings.Join(problems, "\n")
}

func newModule(dir string) *tfModule {
	return &tfModule{
		dir:       dir,
		variables: map[string]*hclsyntax.Block{},
		outputs:   map[string]*hclsyntax.Block{},
		locals:    map[string]*hclsyntax.Attribute{},
		resources: map[string]*hclsyntax.Block{},
		data:      map[string]*hclsyntax.Block{},
		calls:     map[string]*hclsyntax.Block{},
	}
}

func (m *tfModule) add(f *tfFile) {
	m.files = append(m.files, f)
	for _, b := range f.body.Blocks {
		switch {
		case b.Type == "variable" && len(b.Labels) == 1:
			m.variables[b.Labels[0]] = b
		case b.Type == "output" && len(b.Labels) == 1:
			m.outputs[b.Labels[0]] = b
		case b.Type == "module" && len(b.Labels) == 1:
			m.calls[b.Labels[0]] = b
		case b.Type == "resource" && len(b.Labels) == 2:
			m.resources[b.Labels[0]+"."+b.Labels[1]] = b
		case b.Type == "data" && len(b.Labels) == 2:
			m.data[b.Labels[0]+"."+b.Labels[1]] = b
		case b.Type == "locals":
			for name, a := range b.Body.Attributes {
				m.locals[name] = a
			}
		}
	}
}

// module returns the module in dir or fails the test.
func (c *tfConfig) module(t *testing.T, dir string) *tfModule {
	t.Helper()
	m := c.modules[filepath.Clean(dir)]
	if m == nil {
		t.Fatalf("no Terraform module in terraform/%s", dir)
	}
	return m
}

// sortedDirs lists the module directories in a stable order.
func (c *tfConfig) sortedDirs() []string {
	dirs := make([]string, 0, len(c.modules))
	for d := range c.modules {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

// tfvarsFile returns the parsed tfvars file at path or fails the test.
func (c *tfConfig) tfvarsFile(t *testing.T, path string) *tfFile {
	t.Helper()
	for _, f := range c.tfvars {
		if filepath.Clean(f.path) == filepath.Clean(path) {
			return f
		}
	}
	t.Fatalf("no tfvars file terraform/%s", path)
	return nil
}

// resourcesOfType lists the resources of one type, by name.
func (m *tfModule) resourcesOfType(typ string) map[string]*hclsyntax.Block {
	out := map[string]*hclsyntax.Block{}
	for key, b := range m.resources {
		if b.Labels[0] == typ {
			out[strings.TrimPrefix(key, typ+".")] = b
		}
	}
	return out
}

// callsTo lists the module calls whose source is the given local path, by name.
func (m *tfModule) callsTo(source string) map[string]*hclsyntax.Block {
	out := map[string]*hclsyntax.Block{}
	for name, b := range m.calls {
		if s, ok := literalString(attrExpr(b.Body, "source")); ok && s == source {
			out[name] = b
		}
	}
	return out
}

// onlyCallTo returns the name and block of the one call m makes to the
// module at source, failing the test unless there is exactly one.
func (m *tfModule) onlyCallTo(t *testing.T, source string) (string, *hclsyntax.Block) {
	t.Helper()
	calls := m.callsTo(source)
	if len(calls) != 1 {
		t.Fatalf("terraform/%s should call %s exactly once, got %d", m.dir, source, len(calls))
	}
	for name, call := range calls {
		return name, call
	}
	return "", nil
}

// must returns items[key] (one of a module's resources, calls, locals or
// variables), failing the test with msg when it is missing.
func must[V any](t *testing.T, items map[string]*V, key, msg string) *V {
	t.Helper()
	v := items[key]
	if v == nil {
		t.Fatal(msg)
	}
	return v
}

// ---------------------------------------------------------------------------
// Expression helpers
// ---------------------------------------------------------------------------

// attrExpr returns the expression of an attribute of body, or nil.
func attrExpr(body *hclsyntax.Body, name string) hclsyntax.Expression {
	if body == nil {
		return nil
	}
	if a := body.Attributes[name]; a != nil {
		return a.Expr
	}
	return nil
}

// child returns the first nested block of the given type, or nil.
func child(body *hclsyntax.Body, typ string) *hclsyntax.Block {
	if body == nil {
		return nil
	}
	for _, b := range body.Blocks {
		if b.Type == typ {
			return b
		}
	}
	return nil
}

// childBody is child(...).Body, nil-safe.
func childBody(body *hclsyntax.Body, typ string) *hclsyntax.Body {
	if b := child(body, typ); b != nil {
		return b.Body
	}
	return nil
}

// literalString evaluates a constant string expression (no references, no
// function calls).
func literalString(expr hcl.Expression) (string, bool) {
	if expr == nil || len(expr.Variables()) > 0 {
		return "", false
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type().FriendlyName() != "string" {
		return "", false
	}
	return v.AsString(), true
}

// objectKeys returns the keys of an object constructor expression ({ A = ..., "b" = ... }).
func objectKeys(expr hcl.Expression) ([]string, bool) {
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		return nil, false
	}
	keys := make([]string, 0, len(pairs))
	for _, p := range pairs {
		k, ok := literalString(p.Key)
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, true
}

// objectItem returns the value expression of key in an object constructor.
func objectItem(expr hcl.Expression, key string) hcl.Expression {
	pairs, _ := hcl.ExprMap(expr)
	for _, p := range pairs {
		if k, ok := literalString(p.Key); ok && k == key {
			return p.Value
		}
	}
	return nil
}

// references renders the traversals an expression makes, e.g.
// "module.dataset.location" or "var.sources"; index steps print as [..].
func references(expr hcl.Expression) []string {
	return renderReferences(expr, false)
}

// renderReferences is references; with keys, a literal string index prints
// as itself: module.function["compact"].uri.
func renderReferences(expr hcl.Expression, keys bool) []string {
	if expr == nil {
		return nil
	}
	var out []string
	for _, tr := range expr.Variables() {
		out = append(out, renderTraversal(tr, keys))
	}
	return out
}

func traversalString(tr hcl.Traversal) string {
	return renderTraversal(tr, false)
}

func renderTraversal(tr hcl.Traversal, keys bool) string {
	var b strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if keys && s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			} else {
				b.WriteString("[..]")
			}
		default:
			b.WriteString("[..]")
		}
	}
	return b.String()
}

// refersTo reports whether expr references target or something inside it
// (target "module.x" matches "module.x.uri"). A target that names an
// instance by key, module.function["compact"], matches that instance only.
func refersTo(expr hcl.Expression, target string) bool {
	for _, r := range renderReferences(expr, strings.Contains(target, `["`)) {
		if r == target || strings.HasPrefix(r, target+".") || strings.HasPrefix(r, target+"[") {
			return true
		}
	}
	return false
}

// refersToExpanding is refersTo, also following local.NAME to its definition.
func (m *tfModule) refersToExpanding(expr hcl.Expression, target string) bool {
	if refersTo(expr, target) {
		return true
	}
	for _, r := range references(expr) {
		if name, ok := strings.CutPrefix(r, "local."); ok {
			if a := m.locals[strings.SplitN(name, ".", 2)[0]]; a != nil && refersTo(a.Expr, target) {
				return true
			}
		}
	}
	return false
}

// expandLocal returns the definition of local.NAME when expr is exactly that
// reference, and expr otherwise.
func (m *tfModule) expandLocal(expr hcl.Expression) hcl.Expression {
	if e, ok := expr.(*hclsyntax.ScopeTraversalExpr); ok && len(e.Traversal) == 2 && e.Traversal.RootName() == "local" {
		if a, ok := e.Traversal[1].(hcl.TraverseAttr); ok && m.locals[a.Name] != nil {
			return m.locals[a.Name].Expr
		}
	}
	return expr
}

// exprSource is the source text of an expression.
func exprSource(f *tfFile, expr hcl.Expression) string {
	return string(expr.Range().SliceBytes(f.src))
}

// fileOf returns the file of the module that contains a range.
func (m *tfModule) fileOf(rng hcl.Range) *tfFile {
	for _, f := range m.files {
		if f.path == rng.Filename {
			return f
		}
	}
	return nil
}
