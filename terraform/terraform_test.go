// Package terraform_test checks the deployment layer of bqcdc offline, without
// the Google provider (which cannot be obtained here, so `terraform validate`
// and `plan` run only in Cloud Build). This file: formatting and the hygiene
// rules (a) to (d): types and descriptions, no basic roles, no secrets in
// variables or tfvars. contract_test.go: the contract with the Go code and the
// flows, (e) to (h). structure_test.go: references and module interfaces.
// pipeline_test.go: cloudbuild.yaml and scripts/.
package terraform_test

import (
	"bytes"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// (a) Every .tf and .tfvars file is in `terraform fmt` form.
func TestFormatIsCanonical(t *testing.T) {
	cfg := config(t)
	var files []*tfFile
	for _, m := range cfg.modules {
		files = append(files, m.files...)
	}
	files = append(files, cfg.tfvars...)
	if len(files) < 20 {
		t.Fatalf("found only %d Terraform files under terraform/", len(files))
	}
	for _, f := range files {
		if want := hclwrite.Format(f.src); !bytes.Equal(f.src, want) {
			t.Errorf("terraform/%s is not formatted; run `terraform fmt -recursive terraform` (diff -got +want):\n%s",
				f.path, cmp.Diff(string(f.src), string(want)))
		}
	}
}

// (b) Every variable of every module has a type and a description.
func TestVariablesHaveTypeAndDescription(t *testing.T) {
	cfg := config(t)
	n := 0
	for _, dir := range cfg.sortedDirs() {
		for name, v := range cfg.modules[dir].variables {
			n++
			if v.Body.Attributes["type"] == nil {
				t.Errorf("%s: variable %q has no type", v.DefRange(), name)
			}
			if d, ok := literalString(attrExpr(v.Body, "description")); !ok || strings.TrimSpace(d) == "" {
				t.Errorf("%s: variable %q has no literal, non-empty description", v.DefRange(), name)
			}
		}
	}
	if n < 40 {
		t.Errorf("found only %d variables: is the configuration complete?", n)
	}
}

// (c) No basic role anywhere, and every granted role is a literal (or a
// custom role of the configuration, with literal permissions) so that this
// scan sees all of them.
func TestNoPrimitiveRoles(t *testing.T) {
	cfg := config(t)
	roles := 0
	for _, m := range cfg.modules {
		for _, f := range m.files {
			found, n := primitiveRoleFindings(f)
			roles += n
			for _, msg := range found {
				t.Error(msg)
			}
		}
	}
	for _, f := range cfg.tfvars {
		found, _ := primitiveRoleFindings(f)
		for _, msg := range found {
			t.Error(msg)
		}
	}
	if roles < 12 {
		t.Errorf("saw only %d role attributes; expected every IAM grant of the configuration", roles)
	}
}

var primitiveRole = regexp.MustCompile(`(^|[^A-Za-z0-9_./])roles/(owner|editor|viewer)($|[^A-Za-z0-9_.])`)

// customRoleRef reports whether expr refers only to custom roles of the
// configuration (google_project_iam_custom_role), whose permissions are
// literal lists audited where the role is declared.
func customRoleRef(expr hclsyntax.Expression) bool {
	for _, v := range expr.Variables() {
		if v.RootName() != "google_project_iam_custom_role" {
			return false
		}
	}
	return true
}

// primitiveRoleFindings reports basic roles in any string literal and
// role/roles attributes that are not literals; it also counts role attributes.
func primitiveRoleFindings(f *tfFile) (findings []string, roleAttrs int) {
	hclsyntax.VisitAll(f.body, func(node hclsyntax.Node) hcl.Diagnostics {
		switch n := node.(type) {
		case *hclsyntax.Attribute:
			if n.Name == "role" || n.Name == "roles" {
				roleAttrs++
				if len(n.Expr.Variables()) > 0 && !customRoleRef(n.Expr) {
					findings = append(findings, n.SrcRange.String()+": "+n.Name+" is not a literal; grant roles as literal strings so they can be audited")
				}
			}
		case *hclsyntax.LiteralValueExpr:
			if n.Val.Type().FriendlyName() == "string" && primitiveRole.MatchString(n.Val.AsString()) {
				findings = append(findings, n.SrcRange.String()+": basic role "+n.Val.AsString()+" is not allowed (use a predefined role on the narrowest resource)")
			}
		}
		return nil
	})
	return findings, roleAttrs
}

func TestPrimitiveRoleDetectorFires(t *testing.T) {
	src := `
resource "google_project_iam_member" "a" {
  role = "roles/editor"
}
resource "google_project_iam_member" "b" {
  role = var.any_role
}
locals {
  r = ["roles/bigquery.dataViewer", "x roles/owner"]
  ok = "roles/viewerish.notreal"
}
`
	found, n := primitiveRoleFindings(parseSnippet(t, src))
	if n != 2 || len(found) != 3 {
		t.Errorf("detector on a bad snippet: %d role attributes, findings %q; want 2 attributes and 3 findings", n, found)
	}
}

var sensitiveName = regexp.MustCompile(`(?i)password|secret|username|credential|token`)

// (d) Credential-like variables have no default: a secret is never baked in.
func TestCredentialVariablesHaveNoDefault(t *testing.T) {
	cfg := config(t)
	n := 0
	for _, dir := range cfg.sortedDirs() {
		for name, v := range cfg.modules[dir].variables {
			if !sensitiveName.MatchString(name) {
				continue
			}
			n++
			if v.Body.Attributes["default"] != nil {
				t.Errorf("%s: variable %q looks like a credential and must not have a default", v.DefRange(), name)
			}
		}
	}
	if n < 7 {
		t.Errorf("found only %d credential-like variables; expected the registry secret ids of the root and demo modules and the function module's secret_environment_variables", n)
	}
}

// (d) tfvars files hold secret ids, never secret values.
func TestTfvarsHoldNoSecrets(t *testing.T) {
	cfg := config(t)
	if len(cfg.tfvars) == 0 {
		t.Fatal("no .tfvars files found")
	}
	checked := 0
	for _, f := range cfg.tfvars {
		findings, n := secretFindings(f)
		checked += n
		for _, msg := range findings {
			t.Error(msg)
		}
	}
	if checked < 3 {
		t.Errorf("checked only %d credential-named tfvars values; the demo sets the three registry secret ids", checked)
	}
}

var (
	secretID     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
	secretValues = []*regexp.Regexp{
		regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`),
		regexp.MustCompile(`AIza[0-9A-Za-z_-]{35}`),                         // Google API key
		regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@`), // URL with user:password
		regexp.MustCompile(`"type"\s*:\s*"service_account"`),                // service account key JSON
		regexp.MustCompile(`(?i)(password|passwd|secret|token)\s*[:=]\s*\S`),
	}
)

// secretFindings walks every value of a tfvars file; it returns problems and
// the number of credential-named values it checked.
func secretFindings(f *tfFile) (findings []string, checked int) {
	var walk func(path string, expr hclsyntax.Expression)
	walk = func(path string, expr hclsyntax.Expression) {
		switch e := expr.(type) {
		case *hclsyntax.ObjectConsExpr:
			for _, item := range e.Items {
				k, ok := literalString(item.KeyExpr)
				if !ok {
					findings = append(findings, item.KeyExpr.Range().String()+": object key is not a literal")
					continue
				}
				walk(path+"."+k, item.ValueExpr)
			}
			return
		case *hclsyntax.TupleConsExpr:
			for _, el := range e.Exprs {
				walk(path+"[]", el)
			}
			return
		}
		s, ok := literalString(expr)
		if !ok {
			return
		}
		for _, re := range secretValues {
			if re.MatchString(s) {
				findings = append(findings, expr.Range().String()+": "+path+" looks like a secret value; store it in Secret Manager and set only the secret id")
			}
		}
		last := path[strings.LastIndex(path, ".")+1:]
		if sensitiveName.MatchString(last) {
			checked++
			if !secretID.MatchString(s) {
				findings = append(findings, expr.Range().String()+": "+path+" must be a Secret Manager secret id (letters, digits, '_', '-'), not a value")
			}
		}
	}
	names := make([]string, 0, len(f.body.Attributes))
	for name := range f.body.Attributes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		walk(name, f.body.Attributes[name].Expr)
	}
	return findings, checked
}

func TestSecretDetectorFires(t *testing.T) {
	src := `
registry_password_secret_id = "hunter2!"
registry_url                = "https://user:pa55@registry.example.com"
nested = {
  api_token = "tok:123"
  note      = "password=letmein"
}
`
	findings, checked := secretFindings(parseSnippet(t, src))
	if checked != 2 || len(findings) != 4 {
		t.Errorf("detector on a bad snippet: checked %d, findings %q; want 2 checked and 4 findings", checked, findings)
	}
}

// parseSnippet parses HCL text for the detector self-tests.
func parseSnippet(t *testing.T, src string) *tfFile {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "snippet.tf")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return &tfFile{path: "snippet.tf", src: []byte(src), body: f.Body.(*hclsyntax.Body)}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
