package formats_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/testfile"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/wire"
)

// The hostile-input corpus lives with the ingest service, which runs every
// file through Handle; this test only checks the part package formats
// decides (the decode, registry and wire stages), each file within bounded
// time. `go test ./internal/formats -run TestHostileCorpus -update-hostile`
// rewrites the files and the manifest from hostileCases.
var updateHostile = flag.Bool("update-hostile", false, "rewrite internal/ingest/testdata/hostile from hostileCases")

const hostileDir = "../ingest/testdata/hostile"

// manifest is internal/ingest/testdata/hostile/manifest.json.
type manifest struct {
	About string        `json:"about"`
	Cases []hostileCase `json:"cases"`
}

// hostileCase is one file of the corpus and what must become of it.
type hostileCase struct {
	File  string `json:"file"`
	Class string `json:"class"` // the class of bad input, as issue 12 names it
	// Format is how ingest detects the message: confluent (the file is the
	// whole Kafka value: magic byte, schema id, Avro binary), debezium-json,
	// or pubsub-binary (Avro binary; Attributes name the Pub/Sub schema).
	Format     string            `json:"format"`
	Attributes map[string]string `json:"attributes,omitempty"`
	// SchemaID and Schema: the registry must hold the Avro schema in the
	// file Schema (relative to the manifest) under SchemaID; no Schema: the
	// registry must not know SchemaID. For pubsub-binary, Schema is the Avro
	// definition of the Pub/Sub schema revision the attributes name.
	SchemaID int    `json:"schema_id,omitempty"`
	Schema   string `json:"schema,omitempty"`
	Expect   expect `json:"expect"`
}

type expect struct {
	// Outcome is dead_letter or appended (tombstone for a tombstone).
	Outcome string `json:"outcome"`
	// Stage and Reason: the dead letter's stage, and a substring of its
	// reason.
	Stage  string `json:"stage,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Columns: for appended, column name -> BigQuery type the changelog
	// must have (a subset).
	Columns map[string]string `json:"columns,omitempty"`
	// FormatsReason is what package formats alone reports when it decodes
	// the file with its writer schema, where ingest fails earlier (building
	// the BigQuery plan of the schema, stage convert). A case refused at
	// stage convert without it is one package formats decodes.
	FormatsReason string `json:"formats_reason,omitempty"`
}

// Schemas of the corpus.
const (
	rowSchema = `{"type":"record","name":"Row","namespace":"hostile","fields":[
 {"name":"id","type":"long"},
 {"name":"tags","type":{"type":"array","items":"long"}},
 {"name":"nulls","type":{"type":"array","items":"null"}},
 {"name":"attrs","type":{"type":"map","values":"string"}},
 {"name":"note","type":"string"},
 {"name":"data","type":"bytes"}]}`
	nodeSchema = `{"type":"record","name":"Node","namespace":"hostile","fields":[
 {"name":"id","type":"long"},
 {"name":"next","type":["null","Node"]}]}`
	decimalSchema = `{"type":"record","name":"Dec","namespace":"hostile","fields":[
 {"name":"id","type":"long"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":200000000,"scale":100000000}}]}`
	// bulkSchema compiles (package transcode), so its cases run on both
	// decode paths.
	bulkSchema = `{"type":"record","name":"Bulk","namespace":"hostile","fields":[
 {"name":"id","type":"long"},
 {"name":"longs","type":{"type":"array","items":"long"}},
 {"name":"bits","type":{"type":"array","items":{"type":"bytes","connect.name":"io.debezium.data.Bits","connect.parameters":{"length":"512"}}}},
 {"name":"amount","type":{"type":"record","name":"VariableScaleDecimal","namespace":"io.debezium.data","fields":[{"name":"scale","type":"int"},{"name":"value","type":"bytes"}],"connect.name":"io.debezium.data.VariableScaleDecimal"}},
 {"name":"wide","type":{"type":"bytes","logicalType":"decimal","precision":50,"scale":45}},
 {"name":"note","type":"string"}]}`
	reservedSchema = `{"type":"record","name":"Reserved","namespace":"hostile","fields":[
 {"name":"id","type":"long"},
 {"name":"_PARTITIONTIME","type":"long"},
 {"name":"__deleted","type":["null","string"],"default":null},
 {"name":"_cdc_op","type":"string"}]}`
)

// rowPayload encodes a Row: id, then the raw bytes of the tags, nulls and
// attrs blocks, the note and the data.
func rowPayload(tags, nulls, attrs []byte, note, data []byte) []byte {
	return cat(zz(1), tags, nulls, attrs, zz(int64(len(note))), note, zz(int64(len(data))), data)
}

// bulkPayload encodes a Bulk: id, the raw longs and bits blocks, the
// VariableScaleDecimal, the wide decimal's bytes and the note.
func bulkPayload(longs, bits []byte, scale int64, value, wide, note []byte) []byte {
	return cat(zz(1), longs, bits, zz(scale), zz(int64(len(value))), value, zz(int64(len(wide))), wide, zz(int64(len(note))), note)
}

// block is one array block of n items, each the bytes item, and the end.
func block(n int, item []byte) []byte {
	return cat(zz(int64(n)), bytes.Repeat(item, n), []byte{0})
}

func confluent(id int32, payload []byte) []byte { return wire.Append(nil, id, payload) }

func jsonRow(fields, payload string) []byte {
	return []byte(`{"schema":{"type":"struct","name":"hostile.Value","optional":false,"fields":[{"type":"int64","optional":false,"field":"id"}` +
		fields + `]},"payload":{"id":1` + payload + `}}`)
}

func hostileCases() ([]hostileCase, map[string][]byte) {
	files := map[string][]byte{
		"schemas/row.avsc":      []byte(rowSchema),
		"schemas/node.avsc":     []byte(nodeSchema),
		"schemas/decimal.avsc":  []byte(decimalSchema),
		"schemas/reserved.avsc": []byte(reservedSchema),
		"schemas/bulk.avsc":     []byte(bulkSchema),
	}
	var cases []hostileCase
	add := func(file, class, format string, data []byte, id int, schema string, e expect) {
		files[file] = data
		cases = append(cases, hostileCase{File: file, Class: class, Format: format, SchemaID: id, Schema: schema, Expect: e})
	}
	empty := []byte{0}
	dead := func(stage, reason string) expect { return expect{Outcome: "dead_letter", Stage: stage, Reason: reason} }

	// Avro in the Confluent wire format.
	add("avro-array-count-2e32.bin", "a 7-byte array whose block count says 2^32 (was: fatal out of memory)", "confluent",
		confluent(9001, cat(zz(1), zz(1<<32))), 9001, "schemas/row.avsc", dead("decode", "array block count 4294967296"))
	add("avro-array-count-2e47.bin", "an array whose block count says 2^47 (was: panic)", "confluent",
		confluent(9001, cat(zz(1), zz(1<<47), []byte{2})), 9001, "schemas/row.avsc", dead("decode", "array block count 140737488355328"))
	add("avro-array-block-size.bin", "a negative block count followed by a block size beyond the payload", "confluent",
		confluent(9001, cat(zz(1), zz(-3), zz(1<<40), []byte{2})), 9001, "schemas/row.avsc", dead("decode", "array block size 1099511627776"))
	add("avro-zero-size-items.bin", "an array of nulls (items of zero bytes) declaring 2^40 items", "confluent",
		confluent(9001, cat(zz(1), empty, zz(1<<40), empty)), 9001, "schemas/row.avsc", dead("decode", "limited to 65536 per message"))
	add("avro-map-count.bin", "a map whose block count says 2^40", "confluent",
		confluent(9001, cat(zz(1), empty, empty, zz(1<<40), []byte{2, 'k'})), 9001, "schemas/row.avsc", dead("decode", "map block count 1099511627776"))
	add("avro-string-length.bin", "a string whose length says 2^40", "confluent",
		confluent(9001, cat(zz(1), empty, empty, empty, zz(1<<40), []byte("abc"))), 9001, "schemas/row.avsc", dead("decode", "string length 1099511627776"))
	add("avro-varint-overflow.bin", "a varint longer than 64 bits", "confluent",
		confluent(9001, cat([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, empty)), 9001, "schemas/row.avsc", dead("decode", "overflows 64 bits"))
	add("avro-text-2mib.bin", "a legitimate 2 MiB TEXT column and 1 MiB + 1 byte of BYTES (was: refused, greater than MaxByteSliceSize)", "confluent",
		confluent(9001, rowPayload(empty, empty, empty, []byte(strings.Repeat("x", 2<<20)), make([]byte, 1<<20+1))), 9001, "schemas/row.avsc",
		expect{Outcome: "appended", Columns: map[string]string{"note": "STRING", "data": "BYTES"}})
	add("avro-recursive-100k.bin", "a recursive record nested 100,000 levels deep in 100 KB", "confluent",
		confluent(9002, append(cat(zz(1), bytesOf(2, 0)), append([]byte(strings.Repeat("\x02\x02", 50_000)), 0)...)), 9002, "schemas/node.avsc",
		expect{Outcome: "dead_letter", Stage: "convert", Reason: "nested deeper than BigQuery's 15 levels", FormatsReason: "nest deeper than 64 levels"})
	add("avro-decimal-scale-1e8.bin", "a registry schema declaring decimal scale 10^8", "confluent",
		confluent(9003, cat(zz(1), zz(1), []byte{1})), 9003, "schemas/decimal.avsc",
		expect{Outcome: "dead_letter", Stage: "convert", Reason: "scale 100000000", FormatsReason: "decimal(200000000,100000000)"})
	add("avro-reserved-names.bin", "source columns _PARTITIONTIME, __deleted and _cdc_op (was: __PARTITIONTIME, which flow binding refuses)", "confluent",
		confluent(9004, cat(zz(1), zz(2), []byte{2, 2, 'y'}, zz(1), []byte("c"))), 9004, "schemas/reserved.avsc",
		expect{Outcome: "appended", Columns: map[string]string{"src_PARTITIONTIME": "INT64", "src__deleted": "STRING", "src_cdc_op": "STRING"}})
	// Issue 20: what decoding costs, not the bytes.
	add("avro-items-budget.bin", "200,000 one-byte array items in 200 KB, 51 MB decoded (was: 10 MB of them took 2.8-4.1 GB and was retried)", "confluent",
		confluent(9005, bulkPayload(block(200_000, []byte{0}), empty, 0, nil, nil, nil)), 9005, "schemas/bulk.avsc", dead("decode", "decoded-size budget"))
	add("avro-bits-array-budget.bin", "20,000 empty io.debezium.data.Bits items in an array, each padded to 64 bytes", "confluent",
		confluent(9005, bulkPayload(empty, block(20_000, []byte{0}), 0, nil, nil, nil)), 9005, "schemas/bulk.avsc", dead("decode", "decoded-size budget"))
	add("avro-vsd-scale-2e20.bin", "a VariableScaleDecimal zero of scale 2^20 (was: 30 ms per value, appended)", "confluent",
		confluent(9005, bulkPayload(empty, empty, 1<<20, []byte{0}, nil, nil)), 9005, "schemas/bulk.avsc", dead("convert", "beyond the 16383"))
	add("avro-decimal-string-precision.bin", "10^50 in a decimal(50,45) stored as STRING: more than its 5 integer digits (was: appended)", "confluent",
		confluent(9005, bulkPayload(empty, empty, 0, nil, new(big.Int).Exp(big.NewInt(10), big.NewInt(50), nil).Bytes(), nil)), 9005, "schemas/bulk.avsc",
		dead("convert", "more than the 5 integer digits"))
	add("avro-string-not-utf8.bin", "a string that is not UTF-8 (was: appended as is, while Debezium JSON turned it into U+FFFD)", "confluent",
		confluent(9005, bulkPayload(empty, empty, 0, nil, nil, []byte{'a', 0xff, 'b'})), 9005, "schemas/bulk.avsc", dead("decode", "not valid UTF-8"))
	add("wire-header-only.bin", "a Confluent header without a payload", "confluent",
		confluent(9001, nil), 9001, "schemas/row.avsc", dead("wire", "no Avro payload"))
	add("wire-schema-id-negative.bin", "a schema id of 2^31 or more (negative as a Java int)", "confluent",
		[]byte{0, 0x80, 0, 0, 1, 2}, -2147483647, "", dead("wire", "schema id out of range"))
	add("wire-unknown-schema-id.bin", "a schema id the registry does not know", "confluent",
		confluent(2147483647, cat(zz(1))), 2147483647, "", dead("registry", "not found"))

	// Debezium JSON (JsonConverter with schemas.enable=true).
	add("json-decimal-scale-1e8.json", "a Connect Decimal of scale 10^8 (was: 152 s of CPU and 1.2 GB)", "debezium-json",
		jsonRow(`,{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"100000000"},"field":"d"}`, `,"d":1`),
		0, "", dead("registry", "scale 100000000"))
	add("json-decimal-precision-1e8.json", "a Connect Decimal of precision 10^8", "debezium-json",
		jsonRow(`,{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2","connect.decimal.precision":"100000000"},"field":"d"}`, `,"d":1`),
		0, "", dead("registry", "precision 100000000"))
	add("json-decimal-3-5.json", "a Connect Decimal of precision 3 and scale 5 (was: NUMERIC(3,5), which BigQuery refuses)", "debezium-json",
		jsonRow(`,{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"5","connect.decimal.precision":"3"},"field":"d"}`, `,"d":0.00123`),
		0, "", expect{Outcome: "appended", Columns: map[string]string{"d": "NUMERIC(5, 5)"}})
	add("json-decimal-wide.json", "a 1000-digit decimal (PostgreSQL's widest NUMERIC): kept as exact STRING", "debezium-json",
		jsonRow(`,{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"10","connect.decimal.precision":"1000"},"field":"d"}`,
			`,"d":`+strings.Repeat("9", 990)+`.1234567891`),
		0, "", expect{Outcome: "appended", Columns: map[string]string{"d": "STRING"}})
	add("json-bits-2e31.json", "an io.debezium.data.Bits of length 2^31-1 (was: a 256 MiB value)", "debezium-json",
		jsonRow(`,{"type":"bytes","optional":false,"name":"io.debezium.data.Bits","parameters":{"length":"2147483647"},"field":"b"}`, `,"b":"AQ=="`),
		0, "", dead("registry", "Bits length"))
	add("json-nested-3000.json", "a Connect schema nested 3,000 levels (was: 8 s and 465 MB)", "debezium-json",
		[]byte(`{"schema":{"type":"struct","name":"hostile.Value","optional":false,"fields":[`+
			strings.Repeat(`{"type":"struct","optional":false,"field":"f","fields":[`, 3000)+`{"type":"int32","field":"x"}`+strings.Repeat(`]}`, 3000)+
			`]},"payload":{}}`),
		0, "", dead("registry", "nests deeper than 128 levels"))
	many := make([]string, maxFieldsForTest()+43)
	for i := range many {
		many[i] = fmt.Sprintf(`,{"type":"int32","optional":true,"field":"f%d"}`, i)
	}
	add("json-fields-20300.json", "a Connect schema of 20,300 fields (was: 100,000 accepted after 175 s; BigQuery allows 10,000 columns)", "debezium-json",
		jsonRow(strings.Join(many, ""), ""), 0, "", dead("registry", "a struct of 20301 fields; bqcdc reads structs of up to 4096"))
	add("json-number-3m-digits.json", "a number of 3 million digits (was: 17 s to parse)", "debezium-json",
		jsonRow(`,{"type":"int64","optional":false,"field":"n"}`, `,"n":`+strings.Repeat("9", 3_000_000)),
		0, "", dead("decode", "longer than 1024 characters"))
	add("json-number-exponent.json", "a number 1e400 for an int64", "debezium-json",
		jsonRow(`,{"type":"int64","optional":false,"field":"n"}`, `,"n":1e400`), 0, "", dead("decode", "want long, got number"))
	add("json-deep-payload.json", "a payload array nested 200 levels", "debezium-json",
		jsonRow(`,{"type":"array","optional":false,"field":"a","items":{"type":"int32"}}`, `,"a":`+strings.Repeat("[", 200)+strings.Repeat("]", 200)),
		0, "", dead("decode", "nests deeper than 128 levels"))
	add("json-reserved-names.json", "source columns _PARTITIONTIME and __deleted in Debezium JSON", "debezium-json",
		jsonRow(`,{"type":"int64","optional":false,"field":"_PARTITIONTIME"},{"type":"string","optional":true,"field":"__deleted"}`, `,"_PARTITIONTIME":2,"__deleted":"false"`),
		0, "", expect{Outcome: "appended", Columns: map[string]string{"src_PARTITIONTIME": "INT64", "src__deleted": "STRING"}})
	add("json-string-not-utf8.json", "a Debezium JSON string that is not UTF-8 (was: U+FFFD, silently)", "debezium-json",
		jsonRow(`,{"type":"string","optional":true,"field":"s"}`, ",\"s\":\"a\xffb\""), 0, "", dead("decode", "not valid UTF-8"))
	add("json-items-budget.json", "300,000 one-digit array items in Debezium JSON", "debezium-json",
		jsonRow(`,{"type":"array","optional":false,"field":"a","items":{"type":"int32"}}`, `,"a":[`+strings.Repeat("0,", 299_999)+`0]`),
		0, "", dead("decode", "decoded-size budget"))
	add("json-tombstone.json", "a JsonConverter tombstone", "debezium-json", []byte(`{"schema":null,"payload":null}`), 0, "", expect{Outcome: "tombstone"})

	// Pub/Sub schema-encoded Avro.
	pubsub := hostileCase{File: "pubsub-array-count-2e32.bin", Class: "Pub/Sub BINARY Avro whose array block count says 2^32", Format: "pubsub-binary",
		Attributes: map[string]string{formats.AttrSchemaName: "projects/p/schemas/hostile-row", formats.AttrSchemaRevision: "r1", formats.AttrSchemaEncoding: formats.EncodingBinary},
		Schema:     "schemas/row.avsc", Expect: dead("decode", "array block count 4294967296")}
	files[pubsub.File] = cat(zz(1), zz(1<<32))
	cases = append(cases, pubsub)
	return cases, files
}

func TestHostileCorpus(t *testing.T) {
	if *updateHostile {
		cases, files := hostileCases()
		for name, data := range files {
			path := filepath.Join(hostileDir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m := manifest{About: "One file per class of hostile input (issue 12). Each case names the file, its format and attributes, " +
			"the registry schema it needs (schema_id and the schema file; no schema file: the registry must not know the id), " +
			"and the expected outcome: a dead letter with its stage and a substring of its reason, an appended row (with column types), or a tombstone. " +
			"formats_reason is what package formats reports alone where ingest fails earlier. Regenerate with " +
			"go test ./internal/formats -run TestHostileCorpus -update-hostile.", Cases: cases}
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostileDir, "manifest.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var m manifest
	if err := json.Unmarshal(testfile.Bytes(t, filepath.Join(hostileDir, "manifest.json")), &m); err != nil {
		t.Fatal(err)
	}
	cs := formats.NewConnectSchemas()
	for _, c := range m.Cases {
		t.Run(c.File, func(t *testing.T) {
			data := testfile.Bytes(t, filepath.Join(hostileDir, c.File))
			start := time.Now()
			err, checked := decodeHostile(t, cs, c, data)
			if d := time.Since(start); d > time.Minute { // a bound, not a benchmark: the classes this guards against took minutes
				t.Errorf("took %v", d)
			}
			if !checked {
				return
			}
			want := c.Expect.Reason
			if c.Expect.FormatsReason != "" {
				want = c.Expect.FormatsReason
			}
			switch {
			case c.Expect.Outcome != "dead_letter" || (c.Expect.Stage == "convert" && c.Expect.FormatsReason == ""):
				// Appended, or refused by the conversion to BigQuery values,
				// after package formats decoded it.
				if err != nil && !(c.Expect.Outcome == "tombstone" && errors.Is(err, formats.ErrTombstone)) {
					t.Errorf("want %s, got %v", c.Expect.Outcome, err)
				}
			case err == nil || !strings.Contains(err.Error(), want):
				t.Errorf("error %v, want one containing %q", err, want)
			case c.Format == "debezium-json" && string(failure.StageOf(err)) != c.Expect.Stage:
				t.Errorf("error %v at stage %q, want %s", err, failure.StageOf(err), c.Expect.Stage)
			}
			if errors.Is(err, limits.ErrLimit) && !strings.Contains(err.Error(), "limit") && !strings.ContainsAny(err.Error(), "0123456789") {
				t.Errorf("error %v does not name its bound", err)
			}
		})
	}
}

// decodeHostile decodes one corpus file as far as package formats goes;
// checked is false where the outcome is decided elsewhere (the registry
// lookup of an unknown id).
func decodeHostile(t *testing.T, cs *formats.ConnectSchemas, c hostileCase, data []byte) (err error, checked bool) {
	t.Helper()
	switch c.Format {
	case "debezium-json":
		_, _, err := cs.Decode(data)
		return err, true
	case "confluent":
		frame, err := wire.Parse(data)
		if err != nil {
			return err, c.Expect.Stage == "wire"
		}
		if c.Schema == "" {
			return nil, false
		}
		s := parseSchema(t, testfile.Bytes(t, filepath.Join(hostileDir, c.Schema)))
		_, err = formats.AvroBinary(fmt.Sprintf("registry:%d", c.SchemaID), s).Decode(frame.Payload)
		return err, true
	case "pubsub-binary":
		s := parseSchema(t, testfile.Bytes(t, filepath.Join(hostileDir, c.Schema)))
		_, err := formats.AvroBinary("pubsub", s).Decode(data)
		return err, true
	}
	t.Fatalf("unknown format %q", c.Format)
	return nil, false
}
