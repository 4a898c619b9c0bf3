package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// One bad .avsc refuses only the flows of its source, with a message that
// says what is wrong and where, is at most 4 KB and does not echo the
// schema; the other sources' flows bind (before: one bad schema made
// render print nothing for any flow).
func TestBadSchemaStopsOnlyItsFlows(t *testing.T) {
	root := filepath.Join("..", "..")
	flows, errs := flow.ParseDir(filepath.Join(root, "sql", "flows"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	good, err := os.ReadFile(filepath.Join(root, "schemas", "dbserver1.inventory.orders-value.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat(`{"type": "record", "name": "R", "fields": [{"name": "f", "type": `, 10_000) + `"long"` + strings.Repeat(`}]}`, 10_000)
	for _, c := range []struct{ name, text, want string }{
		{"bad JSON", "{\"type\": \"record\",\n \"name\": \"Value\", \"fields\": [}", "not JSON: invalid character '}' looking for beginning of value at line 2, column 30"},
		{"empty file", "  \n", "empty schema"},
		{"not a record", `"string"`, "the top level is string, not a record"},
		{"recursive record", `{"type": "record", "name": "Value", "fields": [{"name": "id", "type": "long"}, {"name": "next", "type": ["null", "Value"]}]}`,
			"recursive record Value (field next)"},
		{"enum with a duplicate symbol", `{"type": "record", "name": "Value", "fields": [{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "A"]}}]}`, "duplicate"},
		{"nested 10,000 deep", deep, "nested deeper than 128 levels"},
		{"unknown type", `{"type": "record", "name": "Value", "fields": [{"name": "e", "type": "bogus_type_with_a_long_name"}]}`, "bogus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(topic, text string) {
				if err := os.WriteFile(filepath.Join(dir, catalog.Subject(topic)+".avsc"), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("dbserver1.inventory.orders", string(good))
			write("dbserver1.inventory.customers", c.text)
			sources, ok, refused := LookupSources(context.Background(), flows, Schemas{Dir: dir})
			if _, found := sources["dbserver1.inventory.orders"]; !found || len(sources) != 1 {
				t.Fatalf("sources %v, want the orders source alone", sources)
			}
			for _, f := range ok {
				if src, _ := f.ChangelogSource(); src != "dbserver1.inventory.orders" {
					t.Errorf("flow %s of %s kept", f.Name, src)
				}
			}
			var list []*flow.Error
			for _, f := range flows {
				if src, _ := f.ChangelogSource(); src == "dbserver1.inventory.customers" {
					list = append(list, &flow.Error{Flow: f.Name})
				}
			}
			var fe *flow.Error
			if !errors.As(refused, &fe) || !strings.Contains(fe.Pos.String(), "customers.sql:") {
				t.Fatalf("refused %v: want *flow.Error at the customers flows' FROM", refused)
			}
			msg := refused.Error()
			for _, want := range list {
				if !strings.Contains(msg, "flow "+want.Flow+":") {
					t.Errorf("flow %s is not named as refused:\n%.500s", want.Flow, msg)
				}
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("want %q in:\n%.1000s", c.want, msg)
			}
			for _, line := range strings.Split(msg, "\n") {
				if len(line) > 4096 {
					t.Errorf("a message of %d bytes", len(line))
				}
				if len(c.text) > 40 && strings.Contains(line, strings.TrimSpace(c.text)[:40]) {
					t.Errorf("the message echoes the schema: %.300s", line)
				}
			}
			bound, bindErr := flow.BindAll(ok, Changelogs(sources))
			if bindErr != nil || len(bound) == 0 {
				t.Errorf("the orders flows do not bind: %v", bindErr)
			}
		})
	}
}
