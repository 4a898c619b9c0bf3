package transcode

import (
	"errors"
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

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name, writer string
		unsupported  bool
	}{
		{"map", `{"type":"record","name":"R","fields":[{"name":"m","type":{"type":"map","values":"long"}}]}`, true},
		{"multi-type union", `{"type":"record","name":"R","fields":[{"name":"u","type":["null","string","long"]}]}`, true},
		{"nested array", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":{"type":"array","items":"int"}}}]}`, true},
		{"geometry", `{"type":"record","name":"R","fields":[{"name":"g","type":{"type":"record","name":"Geometry","namespace":"io.debezium.data.geometry","fields":[{"name":"wkb","type":"bytes"},{"name":"srid","type":["null","int"]}],"connect.name":"io.debezium.data.geometry.Geometry"}}]}`, true},
		{"mislabelled date", `{"type":"record","name":"R","fields":[{"name":"d","type":{"type":"int","logicalType":"time-millis","connect.name":"io.debezium.time.Date"}}]}`, true},
		{"array of null", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"null"}}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := registry.Parse(tt.writer)
			if err != nil {
				t.Fatal(err)
			}
			table := bqschema.ToBigQuery(catalog.MetadataColumns())
			_, err = Compile(Config{Writer: w, Table: table})
			if err == nil || errors.Is(err, ErrUnsupported) != tt.unsupported {
				t.Fatalf("Compile = %v; want an error, ErrUnsupported: %v", err, tt.unsupported)
			}
		})
	}
}
