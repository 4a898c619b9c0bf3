package render

import (
	"io/fs"
	"regexp"
	"testing"
)

// TestTemplatesNameColumnsThroughCatalog keeps catalog the one home of the
// stored columns' names: no template spells one outside a {{...}} action
// (they write {{col "IngestedAt"}}), and col refuses a name it does not know.
func TestTemplatesNameColumnsThroughCatalog(t *testing.T) {
	actions := regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	files, err := fs.Glob(templateFS, "templates/*.sql.tmpl")
	if err != nil || len(files) == 0 {
		t.Fatalf("templates: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := fs.ReadFile(templateFS, f)
		if err != nil {
			t.Fatal(err)
		}
		text := actions.ReplaceAllString(string(b), " ")
		for key, name := range columns {
			if regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_])`).MatchString(text) {
				t.Errorf("%s spells column %s: write {{col %q}}", f, name, key)
			}
		}
	}
	for _, action := range []string{"col", "out"} {
		if _, err := column(action, "Nope"); err == nil {
			t.Errorf(`%s "Nope" must fail the render`, action)
		}
	}
}
