package terraform_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/google/go-cmp/cmp"
)

// TestProviderSchema checks every resource, data source, provider block and
// nested block of the modules under terraform/ against the provider schema
// in provider-schema.json, and every reference to a resource's attributes
// (see provider_schema_check_test.go for what it checks and what it does not).
func TestProviderSchema(t *testing.T) {
	schema, err := readProviderSchema("provider-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(t)

	t.Run("covers exactly the types in use", func(t *testing.T) {
		used := map[string]map[string]bool{"provider": {}, "resource": {}, "data": {}}
		for _, m := range cfg.modules {
			for _, f := range m.files {
				for _, b := range f.body.Blocks {
					if used[b.Type] != nil && len(b.Labels) > 0 {
						used[b.Type][b.Labels[0]] = true
					}
				}
			}
		}
		for kind, have := range map[string][]string{
			"provider": sortedKeys(schema.Provider), "resource": sortedKeys(schema.Resource), "data": sortedKeys(schema.Data),
		} {
			if diff := cmp.Diff(sortedKeys(used[kind]), have); diff != "" {
				t.Errorf("%s types in terraform/ and in provider-schema.json differ (-used +schema); run scripts/extract-provider-schema.sh:\n%s", kind, diff)
			}
		}
		if len(schema.Resource) < 20 {
			t.Errorf("provider-schema.json holds only %d resource types", len(schema.Resource))
		}
	})

	// Versions are pinned in one place, the root module; every module names
	// the providers it uses (source only), and Terraform applies the root's
	// constraints to all of them.
	t.Run("comes from provider versions the modules accept", func(t *testing.T) {
		pinned := 0
		for _, dir := range cfg.sortedDirs() {
			declared := map[string]bool{}
			for _, f := range cfg.modules[dir].files {
				for _, b := range f.body.Blocks {
					rp := childBody(b.Body, "required_providers")
					if b.Type != "terraform" || rp == nil {
						continue
					}
					if dir != "." && b.Body.Attributes["required_version"] != nil {
						t.Errorf("%s: required_version belongs in the root module's versions.tf only", b.DefRange())
					}
					for name, a := range rp.Attributes {
						declared[name] = true
						src, _ := literalString(objectItem(a.Expr, "source"))
						p, ok := schema.Providers[name]
						if !ok || p.Source != "registry.terraform.io/"+src {
							t.Errorf("%s: provider %s (%s) is not the one provider-schema.json was extracted from (%+v)", a.SrcRange, name, src, p)
							continue
						}
						constraint, hasVersion := literalString(objectItem(a.Expr, "version"))
						switch {
						case dir != "." && objectItem(a.Expr, "version") != nil:
							t.Errorf("%s: provider %s: version constraints belong in the root module's versions.tf only", a.SrcRange, name)
						case dir == "." && !hasVersion:
							t.Errorf("%s: the root module must pin a version of provider %s", a.SrcRange, name)
						case dir == ".":
							allowed, err := versionAllowed(p.Version, constraint)
							if err != nil || !allowed {
								t.Errorf("%s: provider-schema.json holds %s %s, which %q does not allow (%v)", a.SrcRange, src, p.Version, constraint, err)
							}
							pinned++
						}
					}
				}
			}
			// Each module declares the providers of its resource, data and
			// provider blocks, and the root pins every provider in use.
			for _, f := range cfg.modules[dir].files {
				for _, b := range f.body.Blocks {
					if metaArgs[b.Type] == nil || len(b.Labels) == 0 {
						continue
					}
					name, _, _ := strings.Cut(b.Labels[0], "_")
					if !declared[name] {
						t.Errorf("%s: terraform/%s uses provider %s but does not declare it in required_providers", b.DefRange(), dir, name)
					}
					if !cfg.modules["."].declaresProvider(name) {
						t.Errorf("%s: provider %s is not pinned in the root module's versions.tf", b.DefRange(), name)
					}
				}
			}
		}
		if pinned < 2 {
			t.Errorf("the root module pins only %d providers, want google and archive", pinned)
		}
	})

	t.Run("every block and reference", func(t *testing.T) {
		var top, args, nested, refs int
		for _, dir := range cfg.sortedDirs() {
			c := &schemaCheck{schema: schema}
			c.checkModule(cfg.modules[dir])
			for _, p := range c.problems {
				t.Error(p)
			}
			for _, f := range cfg.modules[dir].files {
				for _, b := range f.body.Blocks {
					if metaArgs[b.Type] != nil {
						top++
					}
				}
			}
			args, nested, refs = args+c.arguments, nested+c.blocks, refs+c.references
		}
		t.Logf("checked %d resource, data and provider blocks, %d arguments, %d nested blocks, %d references", top, args, nested, refs)
		// A dynamic block (the alert policies' conditions) counts once.
		if top < 40 || args < 250 || nested < 30 || refs < 40 {
			t.Errorf("checked only %d top-level blocks, %d arguments, %d nested blocks, %d references", top, args, nested, refs)
		}
	})
}

// The check catches what it is for, planted in a copy of terraform/: each
// edit alone yields exactly the problem named.
func TestProviderSchemaCatchesPlantedErrors(t *testing.T) {
	schema, err := readProviderSchema("provider-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, old, new, want string
	}{
		{"misspelt argument", "modules/function/main.tf",
			"    entry_point = var.entry_point\n", "    entry_pont = var.entry_point\n",
			"resource google_cloudfunctions2_function.main.build_config: unsupported argument entry_pont (did you mean entry_point?)"},
		{"missing required argument", "modules/dataset/main.tf",
			"  dataset_id  = var.dataset_id\n", "",
			"resource google_bigquery_dataset.main: missing required argument dataset_id"},
		{"unknown block", "main.tf",
			"  clustering = [\"subscription_name\"]\n", "  clustering = [\"subscription_name\"]\n\n  range_partitioning_options {\n  }\n",
			"resource google_bigquery_table.dead_letters: unsupported block type range_partitioning_options"},
		{"misplaced argument", "modules/function/main.tf",
			"  service_config {\n", "  timeout_seconds = 60\n\n  service_config {\n",
			"resource google_cloudfunctions2_function.main: unsupported argument timeout_seconds (it belongs in service_config)"},
		{"computed-only attribute set", "modules/dataset/main.tf",
			"  dataset_id  = var.dataset_id\n", "  dataset_id  = var.dataset_id\n  etag        = \"x\"\n",
			"resource google_bigquery_dataset.main: etag is computed by the provider and cannot be set"},
		{"block written as an argument", "modules/dataset/main.tf",
			"  dataset_id  = var.dataset_id\n", "  dataset_id  = var.dataset_id\n  timeouts    = {}\n",
			"resource google_bigquery_dataset.main: timeouts is a block: write `timeouts { ... }`, not `timeouts = ...`"},
		{"argument written as a block", "modules/dataset/main.tf",
			"  dataset_id  = var.dataset_id\n", "  dataset_id  = var.dataset_id\n\n  labels {\n  }\n",
			"resource google_bigquery_dataset.main: labels is an argument: write `labels = ...`, not a block"},
		{"too many blocks", "main.tf",
			"  time_partitioning {\n", "  time_partitioning {\n    type = \"DAY\"\n  }\n\n  time_partitioning {\n",
			"resource google_bigquery_table.dead_letters: at most 1 time_partitioning block(s), got 2"},
		{"reference to an attribute not exported", "modules/function/outputs.tf",
			"google_cloudfunctions2_function.main.service_config[0].uri", "google_cloudfunctions2_function.main.service_config[0].url",
			"google_cloudfunctions2_function.main.service_config[..].url: resource type google_cloudfunctions2_function block service_config exports no attribute url (did you mean uri?)"},
		{"reference through a splat", "outputs.tf",
			"google_monitoring_dashboard.bqcdc[*].id", "google_monitoring_dashboard.bqcdc[*].dashboard_id",
			"google_monitoring_dashboard.bqcdc[..].dashboard_id: resource type google_monitoring_dashboard exports no attribute dashboard_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTerraform(t)
			path := filepath.Join(dir, tc.file)
			src := testfile.Read(t, path)
			if !strings.Contains(src, tc.old) {
				t.Fatalf("terraform/%s no longer contains %q: update the planted edit", tc.file, tc.old)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(src, tc.old, tc.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, problem := loadConfig(dir)
			if problem != "" {
				t.Fatal(problem)
			}
			var got []string
			for _, m := range cfg.modules {
				c := &schemaCheck{schema: schema}
				c.checkModule(m)
				got = append(got, c.problems...)
			}
			found := false
			for _, p := range got {
				found = found || strings.HasSuffix(p, ": "+tc.want)
			}
			if !found || len(got) != 1 {
				t.Errorf("problems found:\n%s\nwant exactly one ending in %q", strings.Join(got, "\n"), tc.want)
			}
			for _, p := range got {
				if !strings.HasPrefix(p, path+":") {
					t.Errorf("problem %q does not name %s and its line", p, path)
				}
			}
		})
	}
}

// copyTerraform copies the .tf files of terraform/ into a temporary folder.
func copyTerraform(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".terraform" || d.Name() == ".build") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".tf") || strings.HasSuffix(p, "_override.tf") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// declaresProvider reports whether a terraform block of m lists the provider
// in required_providers.
func (m *tfModule) declaresProvider(name string) bool {
	for _, f := range m.files {
		for _, b := range f.body.Blocks {
			if rp := childBody(b.Body, "required_providers"); b.Type == "terraform" && rp != nil && rp.Attributes[name] != nil {
				return true
			}
		}
	}
	return false
}
