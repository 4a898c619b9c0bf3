package transcode

import (
	"testing"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// evolvedWriter is a writer schema whose changelog was built by another
// version: the table below promotes, renames (case), reorders, lacks and
// adds columns.
const evolvedWriter = `{"type":"record","name":"Envelope","namespace":"evo","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[
   {"name":"id","type":"int"},
   {"name":"small","type":["null","int"],"default":null},
   {"name":"big","type":["null","long"],"default":null},
   {"name":"wide","type":["null","long"],"default":null},
   {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
   {"name":"label","type":["null","string"],"default":null},
   {"name":"raw","type":["null","bytes"],"default":null},
   {"name":"name","type":"string"},
   {"name":"dropme","type":["null","string"],"default":null},
   {"name":"nums","type":{"type":"array","items":"int"}},
   {"name":"addr","type":["null",{"type":"record","name":"Addr","fields":[
     {"name":"street","type":"string"},{"name":"gone","type":["null","long"],"default":null},{"name":"n","type":"int"}]}],"default":null},
   {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"qty","type":"int"},{"name":"note","type":["null","string"],"default":null}]}}}
 ]}],"default":null},
 {"name":"after","type":["null","Value"],"default":null},
 {"name":"source","type":{"type":"record","name":"Source","fields":[{"name":"connector","type":"string"},{"name":"ts_ms","type":"long"},{"name":"file","type":"string"},{"name":"pos","type":"long"},{"name":"row","type":"int"},{"name":"snapshot","type":["null","string"],"default":null}]}},
 {"name":"op","type":"string"},
 {"name":"ts_ms","type":["null","long"],"default":null}
]}`

func evolvedTable() bigquery.Schema {
	cols := schema.Columns{}
	cols = append(cols, catalog.MetadataColumns()...) // metadata first: field numbers interleave
	cols = append(cols,
		schema.Column{Name: "lines", Type: schema.Record, Repeated: true, Fields: []schema.Column{{Name: "note", Type: schema.Bytes}, {Name: "qty", Type: schema.Float64}, {Name: "extra", Type: schema.String}}},
		schema.Column{Name: "phone", Type: schema.String},
		schema.Column{Name: "Name", Type: schema.String},
		schema.Column{Name: "id", Type: schema.Int64},
		schema.Column{Name: "small", Type: schema.Float64},
		schema.Column{Name: "big", Type: schema.Numeric},
		schema.Column{Name: "wide", Type: schema.BigNumeric},
		schema.Column{Name: "price", Type: schema.BigNumeric},
		schema.Column{Name: "label", Type: schema.Bytes},
		schema.Column{Name: "raw", Type: schema.String},
		schema.Column{Name: "nums", Type: schema.Numeric, Repeated: true},
		schema.Column{Name: "addr", Type: schema.Record, Fields: []schema.Column{{Name: "n", Type: schema.Float64}, {Name: "street", Type: schema.String}, {Name: "zip", Type: schema.String}}},
		schema.Column{Name: "tags", Type: schema.String, Repeated: true},
		schema.Column{Name: "level", Type: schema.Int64},
	)
	return bqschema.ToBigQuery(cols)
}

var evolvedDefaults = map[string]any{"phone": "n/a", "tags": []any{"x", "y"}, "level": int64(3)}

func TestEvolvedTableMatchesGenericPath(t *testing.T) {
	w, err := registry.Parse(evolvedWriter)
	if err != nil {
		t.Fatal(err)
	}
	p := newPair(t, "evolved", w, evolvedTable(), evolvedDefaults)
	g := newGen(7)
	stages := map[string]int{}
	dropped := 0
	for i := 0; i < 3000; i++ {
		payload, err := g.payload(w)
		if err != nil {
			t.Fatal(err)
		}
		stage := p.compare(t, payload, testMeta)
		stages[string(stage)]++
		if stage == "" {
			_, d, _ := p.plan.Append(nil, payload, testMeta)
			dropped += d
		}
	}
	t.Logf("outcomes: %v, values dropped: %d", stages, dropped)
	if stages[""] < 500 || dropped == 0 {
		t.Errorf("too few rows (%d) or no dropped values (%d) to compare", stages[""], dropped)
	}
}

// TestFallbackColumns: a column of a type the compiler does not cover
// natively is compiled as a fallback column, and its rows (or errors) are
// the reference's, in a table that has the column and in one that lacks it
// (its values dropped and counted).
func TestFallbackColumns(t *testing.T) {
	tests := []struct{ name, column string }{
		{"map", `{"name":"m","type":{"type":"map","values":"long"}}`},
		{"multi-type union", `{"name":"u","type":["null","string","long"]}`},
		{"nested array", `{"name":"a","type":{"type":"array","items":{"type":"array","items":"int"}}}`},
		{"geometry", `{"name":"g","type":{"type":"record","name":"Geometry","namespace":"io.debezium.data.geometry","fields":[{"name":"wkb","type":"bytes"},{"name":"srid","type":["null","int"]}],"connect.name":"io.debezium.data.geometry.Geometry"}}`},
		{"mislabelled date", `{"name":"d","type":{"type":"int","logicalType":"time-millis","connect.name":"io.debezium.time.Date"}}`},
		{"array of null", `{"name":"a","type":{"type":"array","items":"null"}}`},
		{"record holding a map", `{"name":"r","type":{"type":"record","name":"Inner","fields":[{"name":"k","type":"string"},{"name":"m","type":{"type":"map","values":"string"}}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := registry.Parse(`{"type":"record","name":"R","fields":[{"name":"id","type":"long"},` + tt.column + `,{"name":"s","type":["null","string"]}]}`)
			if err != nil {
				t.Fatal(err)
			}
			for table, tbl := range map[string]bigquery.Schema{"with the column": tableFor(t, w), "without it": bqschema.ToBigQuery(catalog.MetadataColumns())} {
				p := newPair(t, tt.name, w, tbl, nil)
				if p.plan.image.fields[1].n.conv != cFallback || p.plan.image.fields[0].n.conv == cFallback {
					t.Fatalf("%s: the column is not the only fallback column", table)
				}
				g := newGen(3)
				stages := map[string]int{}
				for i := 0; i < 500; i++ {
					payload, err := g.payload(w)
					if err != nil {
						t.Fatal(err)
					}
					stages[string(p.compare(t, payload, testMeta))]++
				}
				t.Logf("%s: outcomes %v", table, stages)
			}
		})
	}
}
