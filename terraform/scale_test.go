package terraform_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Issue 11 sizes a deployment at 500 sources. These checks generate the
// tfvars of one and hold the configuration to what such a user writes: one
// map entry per topic, nothing per source anywhere else.

// scaleSources is the generated deployment's size.
const scaleSources = 500

// scaleTfvars writes the sources map of a 500-topic deployment as a user
// would: mostly empty entries, some overriding a setting.
func scaleTfvars() string {
	var b strings.Builder
	b.WriteString("sources = {\n")
	for i := range scaleSources {
		fmt.Fprintf(&b, "  %q = {", fmt.Sprintf("dbserver%d.shop_%02d.table_%03d", i%3+1, i%40, i))
		switch i % 50 {
		case 7:
			b.WriteString(" max_delivery_attempts = 20 ")
		case 13:
			b.WriteString(" schema_evolution = false, labels = { team = \"payments\" } ")
		case 29:
			b.WriteString(" enable_message_ordering = true ")
		}
		b.WriteString("}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// tfFunctions are the Terraform functions the variable validations use,
// from cty's standard library (Terraform's are built on it); alltrue and
// startswith are written out as Terraform documents them.
func tfFunctions() map[string]function.Function {
	alltrue := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			for it := args[0].ElementIterator(); it.Next(); {
				_, v := it.Element()
				if v.IsNull() || v.False() {
					return cty.False, nil
				}
			}
			return cty.True, nil
		},
	})
	startswith := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "string", Type: cty.String}, {Name: "prefix", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(strings.HasPrefix(args[0].AsString(), args[1].AsString())), nil
		},
	})
	// Terraform's length also measures strings (in characters).
	length := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.Number),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if args[0].Type() == cty.String {
				return stdlib.Strlen(args[0])
			}
			return stdlib.Length(args[0])
		},
	})
	return map[string]function.Function{
		"alltrue": alltrue, "startswith": startswith, "can": tryfunc.CanFunc, "try": tryfunc.TryFunc,
		"keys": stdlib.KeysFunc, "values": stdlib.ValuesFunc, "length": length,
		"regex": stdlib.RegexFunc, "lower": stdlib.LowerFunc, "coalesce": stdlib.CoalesceFunc,
		"split": stdlib.SplitFunc, "join": stdlib.JoinFunc, "trimspace": stdlib.TrimSpaceFunc,
	}
}

// variableValue converts a value to a variable's declared type, with the
// optional() attributes' defaults filled in, as Terraform does.
func variableValue(t *testing.T, v *hclsyntax.Block, val cty.Value) cty.Value {
	t.Helper()
	typ, defaults, diags := typeexpr.TypeConstraintWithDefaults(attrExpr(v.Body, "type"))
	if diags.HasErrors() {
		t.Fatalf("variable %s: type: %s", v.Labels[0], diags.Error())
	}
	if defaults != nil {
		val = defaults.Apply(val)
	}
	out, err := convert.Convert(val, typ)
	if err != nil {
		t.Fatalf("variable %s: the value does not convert to its type: %v", v.Labels[0], err)
	}
	return out
}

// failedValidations evaluates variable v's validation conditions on val,
// returning the error messages of those that fail.
func failedValidations(t *testing.T, v *hclsyntax.Block, val cty.Value) []string {
	t.Helper()
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{v.Labels[0]: val})},
		Functions: tfFunctions(),
	}
	var failed []string
	for _, b := range v.Body.Blocks {
		if b.Type != "validation" {
			continue
		}
		ok, diags := attrExpr(b.Body, "condition").Value(ctx)
		if diags.HasErrors() {
			t.Fatalf("variable %s: evaluating a validation: %s", v.Labels[0], diags.Error())
		}
		if !ok.True() {
			msg, _ := literalString(attrExpr(b.Body, "error_message"))
			failed = append(failed, msg)
		}
	}
	return failed
}

// The generated 500-source tfvars are valid for every module that takes
// var.sources (the root and the examples), and the validations do fire on a
// bad entry, so passing means something.
func TestFiveHundredSourcesValidate(t *testing.T) {
	f, diags := hclparse.NewParser().ParseHCL([]byte(scaleTfvars()), "scale.auto.tfvars")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sources, diags := attrs["sources"].Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if n := sources.LengthInt(); n != scaleSources {
		t.Fatalf("generated %d sources, want %d", n, scaleSources)
	}
	bad := map[string]cty.Value{}
	for k, v := range sources.AsValueMap() {
		bad[k] = v
	}
	bad["googly.topic"] = cty.EmptyObjectVal
	// Every topic opting out of schema evolution: their names go to the
	// ingest function in one environment variable, within its 32 KiB.
	allOff := map[string]cty.Value{}
	tooLong := map[string]cty.Value{}
	off := cty.ObjectVal(map[string]cty.Value{"schema_evolution": cty.False})
	for k := range sources.AsValueMap() {
		allOff[k] = off
		tooLong[k+strings.Repeat("x", 60)] = off
	}

	cfg := config(t)
	checked := 0
	for _, dir := range cfg.sortedDirs() {
		v := cfg.modules[dir].variables["sources"]
		if v == nil {
			continue
		}
		checked++
		val := variableValue(t, v, sources)
		if n := val.LengthInt(); n != scaleSources {
			t.Errorf("terraform/%s: var.sources holds %d entries after conversion, want %d", dir, n, scaleSources)
		}
		if failed := failedValidations(t, v, val); len(failed) > 0 {
			t.Errorf("terraform/%s: %d sources fail var.sources validation: %q", dir, scaleSources, failed)
		}
		if !hasValidation(v) {
			continue
		}
		if len(failedValidations(t, v, variableValue(t, v, cty.ObjectVal(bad)))) == 0 {
			t.Errorf("terraform/%s: a source named googly.topic passed var.sources validation: the evaluation checks nothing", dir)
		}
		if val.Type().ElementType().HasAttribute("schema_evolution") {
			if failed := failedValidations(t, v, variableValue(t, v, cty.ObjectVal(allOff))); len(failed) > 0 {
				t.Errorf("terraform/%s: %d sources all without schema evolution fail validation: %q", dir, scaleSources, failed)
			}
			if len(failedValidations(t, v, variableValue(t, v, cty.ObjectVal(tooLong)))) == 0 {
				t.Errorf("terraform/%s: %d 90-character topics without schema evolution (45 KB of names) passed validation", dir, scaleSources)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no module declares variable \"sources\"")
	}
}

func hasValidation(v *hclsyntax.Block) bool {
	for _, b := range v.Body.Blocks {
		if b.Type == "validation" {
			return true
		}
	}
	return false
}

// Sources scale by one map entry each: the root module reaches var.sources
// only through the source module's for_each and for expressions (never an
// entry by name), and the source module takes one topic's settings, none of
// them a per-source collection the user would have to fill.
func TestSourcesNeedNoPerSourceBlocks(t *testing.T) {
	cfg := config(t)
	name, call := cfg.module(t, ".").onlyCallTo(t, "./modules/source")
	if got := references(attrExpr(call.Body, "for_each")); len(got) != 1 || got[0] != "var.sources" {
		t.Errorf("module %q: for_each must be var.sources itself, got %v", name, got)
	}
	for attr, a := range call.Body.Attributes {
		for _, r := range references(a.Expr) {
			if strings.HasPrefix(r, "var.sources") && attr != "for_each" {
				t.Errorf("module %q: %s reads %s; per-source values come from each.value", name, attr, r)
			}
		}
	}
	// Anywhere else, var.sources is read whole (a for expression over it),
	// never as var.sources["topic"].
	for _, dir := range cfg.sortedDirs() {
		for _, f := range cfg.modules[dir].files {
			for _, r := range perSourceReads(f) {
				t.Errorf("%s reads one source by name; a 500-source deployment would need one such line per source", r)
			}
		}
	}
	// The source module's inputs are one topic's: no collection keyed by
	// source that the caller would have to assemble.
	src := cfg.module(t, "modules/source")
	for name, v := range src.variables {
		typ, diags := typeexpr.TypeConstraint(attrExpr(v.Body, "type"))
		if diags.HasErrors() {
			t.Fatalf("modules/source variable %s: %s", name, diags.Error())
		}
		if (typ.IsMapType() || typ.IsObjectType()) && name != "labels" {
			t.Errorf("modules/source variable %s is a %s: per-source modules take one topic's scalars", name, typ.FriendlyName())
		}
	}
	t.Logf("a %d-source deployment plans %d source module instances of %d resources each (%d resources)",
		scaleSources, scaleSources, len(src.resources), scaleSources*len(src.resources))
}

// perSourceReads lists where a file reads one entry of var.sources by key.
func perSourceReads(f *tfFile) []string {
	var out []string
	hclsyntax.VisitAll(f.body, func(n hclsyntax.Node) hcl.Diagnostics {
		if e, ok := n.(*hclsyntax.ScopeTraversalExpr); ok && strings.HasPrefix(traversalString(e.Traversal), "var.sources[..]") {
			out = append(out, fmt.Sprintf("%s: %s", e.Range(), exprSource(f, e)))
		}
		return nil
	})
	return out
}

func TestPerSourceReadDetectorFires(t *testing.T) {
	f := parseSnippet(t, "locals {\n  whole = [for k, s in var.sources : k]\n  one = var.sources[\"dbserver1.inventory.customers\"].labels\n}\n")
	if got := perSourceReads(f); len(got) != 1 || !strings.Contains(got[0], `var.sources["dbserver1.inventory.customers"].labels`) {
		t.Errorf("perSourceReads = %q, want the one read by key", got)
	}
}
