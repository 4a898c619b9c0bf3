package plan

import (
	"slices"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"

	"cloud.google.com/go/bigquery"
)

// Function is one of the flow's table functions: its id and DDL.
type Function struct{ Name, DDL string }

// functionSQL renders each table function (flow.Flow.Routines says which
// a flow gets, and names them) for a target of a shape.
var functionSQL = map[string]func(*flow.Bound, catalog.Location, render.Shape, time.Time) (string, error){
	catalog.AtSuffix: render.AtFunction,
	catalog.ChangesSuffix: func(b *flow.Bound, loc catalog.Location, s render.Shape, _ time.Time) (string, error) {
		return render.ChangesFunction(b, loc, s)
	},
	catalog.AsOfSuffix: func(b *flow.Bound, loc catalog.Location, _ render.Shape, _ time.Time) (string, error) {
		return render.AsOfFunction(b, loc)
	},
}

// Functions renders the DDL of the flow's table functions, in the order
// apply makes them, with pruning bound hint (a committed watermark) where
// they read one (FunctionsBounded).
func (p *Plan) Functions(hint time.Time) ([]Function, error) {
	var out []Function
	for _, suffix := range p.Flow.Routines() {
		ddl, err := functionSQL[suffix](p.Flow, p.Loc, p.Shape(), hint)
		if err != nil {
			return nil, err
		}
		out = append(out, Function{catalog.RoutineName(p.Flow.Flow, suffix), ddl})
	}
	return out, nil
}

// FunctionsBounded reports whether the flow's table functions read the
// changelog after a pruning bound (its <target>_at, of a target of
// versions): compaction renders them again with a newer one now and then.
func (p *Plan) FunctionsBounded() bool {
	return slices.Contains(p.Flow.Routines(), catalog.AtSuffix) && render.AtBounded(p.Flow, p.Shape())
}

// ObjectKind is what an Object is.
type ObjectKind uint8

// The object kinds.
const (
	_ ObjectKind = iota
	Table
	ViewObject
	TableFunction
)

// Object is one object the flow needs, as bqcdc render prints it: a table
// (Table: its metadata), its view (SQL: the query) or a table function
// (SQL: its DDL), by dataset and id.
type Object struct {
	Kind          ObjectKind
	Dataset, Name string
	Table         *bigquery.TableMetadata
	SQL           string
}

// Objects lists the flow's objects in the order apply makes them: its
// change table (when it keeps a change feed), its state table, its view
// (rendered with the bound its labels carry, the epoch for none) and its
// table functions.
func (p *Plan) Objects(labels map[string]string) ([]Object, error) {
	b, ds := p.Flow, p.Loc.Dataset(p.Flow.Flow)
	var out []Object
	if ct := p.ChangeTable(); ct != nil {
		out = append(out, Object{Kind: Table, Dataset: ds, Name: catalog.ChangesName(b.Flow), Table: ct})
	}
	out = append(out, Object{Kind: Table, Dataset: ds, Name: catalog.StateName(b.Flow), Table: p.StateTable()})
	v, err := p.View(render.Epoch, labels)
	if err != nil {
		return nil, err
	}
	out = append(out, Object{Kind: ViewObject, Dataset: ds, Name: catalog.ViewName(b.Flow), SQL: v.SQL})
	fns, err := p.Functions(render.Epoch)
	if err != nil {
		return nil, err
	}
	for _, f := range fns {
		out = append(out, Object{Kind: TableFunction, Dataset: ds, Name: f.Name, SQL: f.DDL})
	}
	return out, nil
}
