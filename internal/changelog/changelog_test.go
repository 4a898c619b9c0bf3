package changelog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/avrocases"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
)

// TestOf checks the mapping of an envelope and of a plain record (image
// columns first, then catalog's metadata), and the stage each refusal
// carries: what ingest dead-letters a writer's messages at.
func TestOf(t *testing.T) {
	const image = `{"type":"record","name":"Value","namespace":"db.inv.t","fields":[{"name":"id","type":"int"},{"name":"email","type":["null","string"]}]}`
	envelope := `{"type":"record","name":"Envelope","namespace":"db.inv.t","fields":[
		{"name":"before","type":["null",` + image + `]},
		{"name":"after","type":["null","Value"]},
		{"name":"source","type":{"type":"record","name":"Source","fields":[{"name":"ts_ms","type":"long"}]}},
		{"name":"op","type":"string"},{"name":"ts_ms","type":["null","long"]}]}`
	for name, text := range map[string]string{"envelope": envelope, "plain": image} {
		l, err := Of(avrocases.Parse(t, text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if l.Shape.Envelope != (name == "envelope") || len(l.Image) != 2 {
			t.Errorf("%s: envelope %v, %d image fields", name, l.Shape.Envelope, len(l.Image))
		}
		if l.Columns[0].Name != "id" || l.Columns[1].Name != "email" {
			t.Errorf("%s: columns start %s, %s", name, l.Columns[0].Name, l.Columns[1].Name)
		}
		if _, ok := l.Columns.Lookup(catalog.ColIngestedAt); !ok {
			t.Errorf("%s: no %s column", name, catalog.ColIngestedAt)
		}
	}
	for _, tc := range []struct {
		name, text string
		stage      failure.Stage
	}{
		{"not a record", `"string"`, failure.StageDecode},
		{"an image at the column limit, the metadata past it", wide(limits.MaxColumns), failure.StageSchema},
		{"an image past the column limit", wide(limits.MaxColumns + 1), failure.StageConvert},
	} {
		l, err := Of(avrocases.Parse(t, tc.text))
		if err == nil || !failure.IsPermanent(err) || failure.StageOf(err) != tc.stage {
			t.Errorf("%s: error %v, want a permanent one at stage %s", tc.name, err, tc.stage)
		}
		if tc.stage == failure.StageSchema && (l.Shape.Image == nil || l.Columns != nil) {
			t.Errorf("%s: a schema refusal must keep the shape and no columns", tc.name)
		}
	}
}

// wide is a plain record of n int columns.
func wide(n int) string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = fmt.Sprintf(`{"name":"c%d","type":"int"}`, i)
	}
	return `{"type":"record","name":"Wide","fields":[` + strings.Join(fields, ",") + `]}`
}
