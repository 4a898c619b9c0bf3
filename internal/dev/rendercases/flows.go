package rendercases

import (
	"testing"

	"github.com/bqcdc/bqcdc/internal/flow"
)

// Flows parses the flow files of dir (sql/render/testdata, as a path from
// the calling test's package: the rendered SQL names it) and binds every
// flow to its source in Sources, failing tb on any error.
func Flows(tb testing.TB, dir string) []*flow.Bound {
	tb.Helper()
	flows, errs := flow.ParseDir(dir)
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	sources := Sources()
	out := make([]*flow.Bound, 0, len(flows))
	for _, f := range flows {
		b, err := flow.Bind(f, sources[f.SourceKey()])
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
