// Package rendercases holds the changelog schemas of the test sources that
// sql/render/testdata/flows.sql reads, and the flow files of the many-table
// deployment the scale tests use. More than one package binds those flows
// (sql/render for its golden files and scale benchmarks, internal/cost for
// its model, internal/apply for its scale tests), and test files cannot
// cross packages, so they live here.
package rendercases

import (
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// Sources returns the columns of each test source, keyed as
// flow.Flow.SourceKey keys them: the topics' changelogs (their columns, then
// bqcdc's metadata columns) and the snapshot flows' tables.
func Sources() map[string]schema.Columns {
	meta := catalog.MetadataColumns()
	with := func(cols ...schema.Column) schema.Columns { return append(schema.Columns(cols), meta...) }
	return map[string]schema.Columns{
		"users": with(
			schema.Column{Name: "userId", Type: schema.Int64}, schema.Column{Name: "name", Type: schema.String},
			schema.Column{Name: "city", Type: schema.String}, schema.Column{Name: "operation", Type: schema.String},
			schema.Column{Name: "sequenceNum", Type: schema.Int64}, schema.Column{Name: "tags", Type: schema.String, Repeated: true}),
		"odd.names": with(
			schema.Column{Name: "order", Type: schema.Int64}, schema.Column{Name: "group", Type: schema.String},
			schema.Column{Name: "select", Type: schema.String}, schema.Column{Name: "from", Type: schema.Date},
			schema.Column{Name: "where", Type: schema.JSON}, schema.Column{Name: "by", Type: schema.Timestamp}),
		// Snapshot tables: a user's table of full extracts, no bqcdc columns.
		"table:staging.customer_extracts": {
			{Name: "id", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "city", Type: schema.String},
			{Name: "tags", Type: schema.String, Repeated: true}, {Name: "extracted_at", Type: schema.Timestamp}},
		"table:staging.odd extracts": {
			{Name: "order", Type: schema.Int64}, {Name: "group", Type: schema.String}, {Name: "select", Type: schema.String},
			{Name: "from", Type: schema.Date}, {Name: "by", Type: schema.Date}},
	}
}
