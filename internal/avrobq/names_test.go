package avrobq

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

func TestColumnName(t *testing.T) {
	r := strings.Repeat
	for _, tc := range []struct{ source, want string }{
		// Names BigQuery accepts never change.
		{"id", "id"}, {"Window", "Window"}, {"_x", "_x"}, {"a1_B2", "a1_B2"}, {"_", "_"}, {"_cdc", "_cdc"}, {"_cd_op", "_cd_op"},
		{"_TABLE", "_TABLE"}, {"TABLE_", "TABLE_"}, {"_PARTITIO", "_PARTITIO"}, {"_ROOT__", "_ROOT__"}, {"_CHANGE_TYP", "_CHANGE_TYP"},
		{r("a", 300), r("a", 300)},
		// BigQuery's reserved prefixes, in any case, get "src" in front.
		{"_TABLE_SUFFIX", "src_TABLE_SUFFIX"}, {"_table_x", "src_table_x"}, {"_FILE_NAME", "src_FILE_NAME"}, {"_File_", "src_File_"},
		{"_PARTITIONTIME", "src_PARTITIONTIME"}, {"_partitiondate", "src_partitiondate"}, {"_ROW_TIMESTAMP", "src_ROW_TIMESTAMP"},
		{"__ROOT__", "src__ROOT__"}, {"__root__x", "src__root__x"}, {"_COLIDENTIFIER", "src_COLIDENTIFIER"}, {"_colidentifier7", "src_colidentifier7"},
		// So do bqcdc's: "__" (its SQL's columns; Debezium's unwrap SMT
		// writes __deleted, __op, ...), "_cdc_" (changelog metadata) and the
		// Storage Write API's CDC pseudo-columns.
		{"__deleted", "src__deleted"}, {"__TABLE_", "src__TABLE_"}, {"__START_AT", "src__START_AT"}, {"__", "src__"},
		{"_cdc_op", "src_cdc_op"}, {"_CDC_x", "src_CDC_x"}, {"_CHANGE_TYPE", "src_CHANGE_TYPE"}, {"_change_sequence_number", "src_change_sequence_number"},
		// Other producers' names: one underscore per character BigQuery refuses.
		{"unit price", "unit_price"}, {"e-mail", "e_mail"}, {"a.b.c", "a_b_c"}, {"price ($)", "price____"},
		{"Größe", "Gr__e"}, {"名前", "src__"}, {"a\xffb", "a_b"}, {"-x", "_x"}, {"--x", "src__x"},
		{"1st", "_1st"}, {"2024-05", "_2024_05"}, {"", "_"}, {" _TABLE_x", "src__TABLE_x"}, {"_TABLE_ x", "src_TABLE__x"},
		// Longer than 300: cut to 291, then "_" and 8 hex digits of the source's SHA-256.
		{r("a", 301), r("a", 291) + "_eb22b48c"},
		{r("é", 301), "src" + r("_", 288) + "_28057b13"},
		{"_TABLE_" + r("x", 300), "src_TABLE_" + r("x", 281) + "_3d59773f"},
	} {
		if got := ColumnName(tc.source); got != tc.want {
			t.Errorf("ColumnName(%.40q) = %.60q, want %.60q", tc.source, got, tc.want)
		}
		got := ColumnName(tc.source)
		if !validColumnName(got) {
			t.Errorf("ColumnName(%.40q) = %.60q is not a valid BigQuery column name", tc.source, got)
		}
		if strings.HasPrefix(got, "__") || strings.HasPrefix(strings.ToLower(got), "_cdc_") {
			t.Errorf("ColumnName(%.40q) = %.60q starts with a prefix flow binding or the changelog refuses", tc.source, got)
		}
		if again := ColumnName(got); again != got {
			t.Errorf("ColumnName is not idempotent on %.40q: %.60q then %.60q", tc.source, got, again)
		}
	}
}

func compile(t *testing.T, text string) (Fields, error) {
	t.Helper()
	return FromRecord(avro.MustParse(text).(*avro.RecordSchema))
}

func TestSanitisedNamesAtEveryLevel(t *testing.T) {
	fields, err := compile(t, `{"type":"record","name":"N","fields":[
	 {"name":"_PARTITIONTIME","type":"long"},
	 {"name":"inner","type":{"type":"record","name":"Inner","fields":[
	   {"name":"_TABLE_SUFFIX","type":"string"},
	   {"name":"deeper","type":["null",{"type":"record","name":"Deeper","fields":[{"name":"_file_name","type":"int"}]}]}]}},
	 {"name":"list","type":{"type":"array","items":{"type":"record","name":"Item","fields":[{"name":"__ROOT__","type":"boolean"}]}}},
	 {"name":"m","type":{"type":"map","values":{"type":"record","name":"V","fields":[{"name":"_ROW_TIMESTAMP","type":"long"}]}}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{"INT64", "STRUCT<`src_TABLE_SUFFIX` STRING, `deeper` STRUCT<`src_file_name` INT64>>",
		"ARRAY<STRUCT<`src__ROOT__` BOOL>>", "ARRAY<STRUCT<`key` STRING, `value` STRUCT<`src_ROW_TIMESTAMP` INT64>>>"}
	var gotTypes []string
	for _, f := range fields {
		gotTypes = append(gotTypes, f.SQLType())
	}
	if d := cmp.Diff(wantTypes, gotTypes); d != "" {
		t.Errorf("types (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"src_PARTITIONTIME", "inner", "list", "m"}, fields.Columns().Names()); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if fields[0].Source != "_PARTITIONTIME" {
		t.Errorf("Source = %q", fields[0].Source)
	}
	got, err := fields.Convert(map[string]any{
		"_PARTITIONTIME": int64(1),
		"inner":          map[string]any{"_TABLE_SUFFIX": "s", "deeper": map[string]any{"Deeper": map[string]any{"_file_name": 2}}},
		"list":           []any{map[string]any{"__ROOT__": true}},
		"m":              map[string]any{"k": map[string]any{"_ROW_TIMESTAMP": int64(3)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"src_PARTITIONTIME": int64(1),
		"inner":             map[string]any{"src_TABLE_SUFFIX": "s", "deeper": map[string]any{"src_file_name": int64(2)}},
		"list":              []any{map[string]any{"src__ROOT__": true}},
		"m":                 []any{map[string]any{"key": "k", "value": map[string]any{"src_ROW_TIMESTAMP": int64(3)}}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Convert (-want +got):\n%s", d)
	}
}

// A later schema version never renames a column an earlier one created,
// whatever fields it adds.
func TestColumnNamesStableAcrossVersions(t *testing.T) {
	v1, err := compile(t, `{"type":"record","name":"S","fields":[{"name":"id","type":"long"},{"name":"_TABLE_x","type":"string"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := compile(t, `{"type":"record","name":"S","fields":[{"name":"_PARTITION_y","type":"long"},{"name":"id","type":"long"},
	 {"name":"_TABLE_x","type":"string"},{"name":"_TABLE_z","type":"string"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, f := range v2 {
		byName[f.Source] = f.Name
	}
	for _, f := range v1 {
		if byName[f.Source] != f.Name {
			t.Errorf("field %s: column %s in version 1, %s in version 2", f.Source, f.Name, byName[f.Source])
		}
	}
}

func TestColumnNameCollisions(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		mention      []string
	}{
		{"case", `{"type":"record","name":"C1","fields":[{"name":"id","type":"long"},{"name":"ID","type":"long"}]}`,
			[]string{`"id"`, `"ID"`, "C1"}},
		{"rewritten onto an existing name", `{"type":"record","name":"C2","fields":[{"name":"src_TABLE_x","type":"long"},{"name":"_TABLE_x","type":"long"}]}`,
			[]string{`"src_TABLE_x"`, `"_TABLE_x"`}},
		{"rewritten onto an existing name in another case", `{"type":"record","name":"C3","fields":[{"name":"SRC_table_X","type":"long"},{"name":"_TABLE_x","type":"long"}]}`,
			[]string{`"SRC_table_X"`, `"_TABLE_x"`}},
		{"inside a nested record", `{"type":"record","name":"C4","fields":[{"name":"ok","type":"long"},
		  {"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"City","type":"string"},{"name":"city","type":"string"}]}}]}`,
			[]string{`"City"`, `"city"`, "Addr", `"addr"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(t, tc.schema)
			if err == nil {
				t.Fatal("compiled; want a collision error")
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %s", err, m)
				}
			}
		})
	}
	// The same names in different records do not collide.
	if _, err := compile(t, `{"type":"record","name":"C5","fields":[{"name":"id","type":"long"},
	  {"name":"sub","type":{"type":"record","name":"Sub","fields":[{"name":"ID","type":"long"}]}}]}`); err != nil {
		t.Errorf("a subfield collided with a top-level column: %v", err)
	}
}

func TestConvertErrorNamesSourceAndColumn(t *testing.T) {
	fields, err := compile(t, `{"type":"record","name":"E","fields":[{"name":"_PARTITIONTIME","type":{"type":"int","connect.name":"io.debezium.time.Date"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fields.Convert(map[string]any{"_PARTITIONTIME": int64(1) << 40})
	if !errors.Is(err, ErrValue) || !strings.Contains(err.Error(), `"_PARTITIONTIME"`) || !strings.Contains(err.Error(), `"src_PARTITIONTIME"`) {
		t.Errorf("error = %v", err)
	}
}

// hamba rounds when it encodes, so a decoded decimal always has the
// schema's scale; a value from anywhere else with more digits is refused,
// never rounded.
func TestDecimalNeverRounds(t *testing.T) {
	conv := decimalConv(decimalLimits{typ: "NUMERIC", precision: 10, scale: 2})
	for _, in := range []*big.Rat{big.NewRat(1, 3), big.NewRat(-1, 1000)} {
		if got, err := conv(in); !errors.Is(err, ErrValue) {
			t.Errorf("%s: got %v, %v; want ErrValue", in.RatString(), got, err)
		}
	}
}

// A decimal inside a union of several types becomes JSON; its text is the
// exact decimal, not a fraction.
func TestDecimalInJSONUnion(t *testing.T) {
	fields, err := compile(t, `{"type":"record","name":"U","fields":[{"name":"u","type":["null","string",{"type":"bytes","logicalType":"decimal","precision":9,"scale":3}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fields.Convert(map[string]any{"u": map[string]any{"bytes.decimal": big.NewRat(-123, 100)}})
	if err != nil {
		t.Fatal(err)
	}
	if got["u"] != `"-1.23"` {
		t.Errorf("got %v", got["u"])
	}
}
