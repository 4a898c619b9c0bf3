package formats

import (
	"errors"
	"io"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

// customerV2 has one field of every Avro type and logical type Pub/Sub
// schemas allow; customerV1 is the same record one revision earlier.
const customerV2 = `{"type":"record","name":"Customer","namespace":"com.example","fields":[
 {"name":"id","type":"int"},
 {"name":"email","type":"string"},
 {"name":"tier","type":["null","string"],"default":null},
 {"name":"balance","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
 {"name":"birth_date","type":{"type":"int","logicalType":"date"}},
 {"name":"updated_at","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"opens_at","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"score","type":"double"},
 {"name":"ratio","type":"float"},
 {"name":"active","type":"boolean"},
 {"name":"photo","type":"bytes"},
 {"name":"code","type":{"type":"fixed","name":"Code","size":4}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["ACTIVE","CLOSED"]}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"attrs","type":{"type":"map","values":"long"}},
 {"name":"address","type":["null",{"type":"record","name":"Address","fields":[
   {"name":"street","type":"string"},{"name":"zip","type":["null","string"],"default":null}]}],"default":null},
 {"name":"note","type":["null","string","long"],"default":null},
 {"name":"uid","type":{"type":"string","logicalType":"uuid"}},
 {"name":"loyalty","type":"long","default":0}
]}`

var customerV1 = strings.Replace(customerV2, `,
 {"name":"loyalty","type":"long","default":0}`, "", 1)

type address struct {
	Street string  `avro:"street"`
	Zip    *string `avro:"zip"`
}

type customer struct {
	ID        int32            `avro:"id"`
	Email     string           `avro:"email"`
	Tier      *string          `avro:"tier"`
	Balance   *big.Rat         `avro:"balance"`
	BirthDate time.Time        `avro:"birth_date"`
	UpdatedAt time.Time        `avro:"updated_at"`
	OpensAt   time.Duration    `avro:"opens_at"`
	Score     float64          `avro:"score"`
	Ratio     float32          `avro:"ratio"`
	Active    bool             `avro:"active"`
	Photo     []byte           `avro:"photo"`
	Code      [4]byte          `avro:"code"`
	Status    string           `avro:"status"`
	Tags      []string         `avro:"tags"`
	Attrs     map[string]int64 `avro:"attrs"`
	Address   *address         `avro:"address"`
	Note      any              `avro:"note"`
	UID       string           `avro:"uid"`
	Loyalty   int64            `avro:"loyalty"`
}

func ptr[T any](v T) *T { return &v }

func rat(s string) *big.Rat {
	r, _ := new(big.Rat).SetString(s)
	return r
}

// avroJSONCases pairs records with their Avro JSON encoding, as Pub/Sub
// delivers it for a topic with encoding JSON.
var avroJSONCases = []struct {
	name string
	rec  customer
	json string
}{
	{
		name: "every branch set",
		rec: customer{ID: 1005, Email: "sarah@example.com", Tier: ptr("gold"), Balance: rat("1234.56"),
			BirthDate: time.Date(2022, 1, 8, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2024, 5, 6, 9, 8, 9, 123456000, time.UTC),
			OpensAt: 9 * time.Hour, Score: 98.5, Ratio: 0.25, Active: true, Photo: []byte{0, 0xff, 0x10}, Code: [4]byte{'A', 'B', 0, 0xff},
			Status: "ACTIVE", Tags: []string{"a", "b"}, Attrs: map[string]int64{"x": 1, "y": -2},
			Address: &address{Street: "1 Main St", Zip: ptr("0150")}, Note: int64(42),
			UID: "7d444840-9dc0-11d1-b245-5ffdce74fad2", Loyalty: 7},
		json: `{"id":1005,"email":"sarah@example.com","tier":{"string":"gold"},"balance":{"bytes":"\u0001\u00e2@"},
			"birth_date":19000,"updated_at":1714986489123456,"opens_at":32400000,"score":98.5,"ratio":0.25,"active":true,
			"photo":"\u0000\u00ff\u0010","code":"AB\u0000\u00ff","status":"ACTIVE","tags":["a","b"],"attrs":{"x":1,"y":-2},
			"address":{"com.example.Address":{"street":"1 Main St","zip":{"string":"0150"}}},"note":{"long":42},
			"uid":"7d444840-9dc0-11d1-b245-5ffdce74fad2","loyalty":7}`,
	},
	{
		name: "nulls and edge values",
		rec: customer{ID: -7, Email: "", Balance: rat("-0.05"), BirthDate: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
			UpdatedAt: time.UnixMicro(-1000).UTC(), Score: 1e300, Ratio: -1.5, Photo: []byte{}, Status: "CLOSED",
			Tags: []string{}, Attrs: map[string]int64{}, Address: &address{Street: "x"}, Note: "hi", Loyalty: math.MinInt64},
		json: `{"id":-7,"email":"","tier":null,"balance":{"bytes":"\u00fb"},"birth_date":-1,"updated_at":-1000,"opens_at":0,
			"score":1e300,"ratio":-1.5,"active":false,"photo":"","code":"\u0000\u0000\u0000\u0000","status":"CLOSED",
			"tags":[],"attrs":{},"address":{"com.example.Address":{"street":"x","zip":null}},"note":{"string":"hi"},
			"uid":"","loyalty":-9223372036854775808}`,
	},
	{
		// Bare values for single-branch unions, short names in wrappers and
		// a missing field with a default are read leniently.
		name: "lenient forms and defaults",
		rec: customer{ID: 1, Email: "e", Tier: ptr("silver"), BirthDate: time.Unix(0, 0).UTC(), UpdatedAt: time.Unix(0, 0).UTC(),
			Tags: []string{}, Attrs: map[string]int64{}, Address: &address{Street: "s", Zip: ptr("z")}, Status: "ACTIVE",
			Photo: []byte{}},
		json: `{"id":1,"email":"e","tier":"silver","balance":null,"birth_date":0,"updated_at":0,"opens_at":0,"score":0,
			"ratio":0,"active":false,"photo":"","code":"\u0000\u0000\u0000\u0000","status":"ACTIVE","tags":[],"attrs":{},
			"address":{"Address":{"street":"s","zip":"z"}},"note":null,"uid":"","unknown":[1,2,3]}`,
	},
}

// revision is one Pub/Sub schema revision's two Writers, as PubSubRevision
// builds them for package pubsubschema.
type revision struct{ binary, json *Writer }

func parseRevision(id, definition string) (*revision, error) {
	binary, json, err := PubSubRevision(id, definition)
	if err != nil {
		return nil, err
	}
	return &revision{binary: binary, json: json}, nil
}

func revisionFor(t *testing.T, definition string) *revision {
	t.Helper()
	r, err := parseRevision("projects/p/schemas/customers@r1", definition)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAvroJSONMatchesBinary(t *testing.T) {
	r := revisionFor(t, customerV2)
	for _, tc := range avroJSONCases {
		t.Run(tc.name, func(t *testing.T) {
			bin, err := avro.Marshal(r.binary.Schema, tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			fromBinary, err := r.binary.Decode(bin)
			if err != nil {
				t.Fatal(err)
			}
			fromJSON, err := r.json.Decode([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(fromBinary, fromJSON, cmp.Comparer(func(a, b *big.Rat) bool { return a.Cmp(b) == 0 })); d != "" {
				t.Errorf("JSON decodes differently from binary (-binary +json):\n%s", d)
			}
		})
	}
}

func TestAvroDecodeErrors(t *testing.T) {
	r := revisionFor(t, customerV2)
	good := avroJSONCases[0].json
	edit := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%q not in the JSON", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	tests := []struct{ name, json, wantErr string }{
		{name: "wrong type", json: edit(`"id":1005`, `"id":"1005"`), wantErr: `field id: want int, got string "1005"`},
		{name: "fraction in an int", json: edit(`"id":1005`, `"id":10.5`), wantErr: "field id: want int, got number 10.5"},
		{name: "unknown union branch", json: edit(`{"long":42}`, `{"double":4.2}`), wantErr: `field note: union branch "double" is not one of [null, string, long]`},
		{name: "null in a record", json: edit(`"street":"1 Main St"`, `"street":null`), wantErr: "field address.street: null, but its type string is not nullable"},
		{name: "byte above 255", json: edit(`"photo":"\u0000`, `"photo":"\u0100`), wantErr: "field photo: bytes hold the code point U+0100"},
		{name: "fixed of the wrong size", json: edit(`"code":"AB\u0000\u00ff"`, `"code":"AB"`), wantErr: "field code: 2 bytes for fixed fixed com.example.Code of size 4"},
		{name: "unknown enum symbol", json: edit(`"status":"ACTIVE"`, `"status":"GONE"`), wantErr: `field status: "GONE" is not a symbol of enum com.example.Status`},
		{name: "array element", json: edit(`"tags":["a","b"]`, `"tags":["a",2]`), wantErr: "field tags[1]: want string, got number 2"},
		{name: "map value", json: edit(`"y":-2`, `"y":true`), wantErr: `field attrs["y"]: want long, got boolean true`},
		{name: "missing field without default", json: edit(`"email":"sarah@example.com",`, ``), wantErr: "field email: missing, and the schema gives it no default"},
		{name: "truncated", json: good[:len(good)/2], wantErr: "parsing JSON: unexpected EOF"},
		{name: "not an object", json: `"x"`, wantErr: `the message is string "x", want a JSON object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.json.Decode([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}

	bin, err := avro.Marshal(r.binary.Schema, avroJSONCases[0].rec)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < len(bin); cut += 7 {
		if _, err := r.binary.Decode(bin[:len(bin)-cut]); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("binary cut by %d bytes: %v, want truncation", cut, err)
		}
	}
	if _, err := r.binary.Decode(append(bin, 0)); err == nil || !strings.Contains(err.Error(), "trailing bytes") {
		t.Errorf("trailing byte: %v", err)
	}
}

// Two revisions of one record name must each decode with their own layout,
// which a hamba config shared between them would not guarantee.
func TestRevisionsDoNotShareCodecs(t *testing.T) {
	v1, v2 := revisionFor(t, customerV1), revisionFor(t, customerV2)
	rec := avroJSONCases[0].rec
	b2, err := avro.Marshal(v2.binary.Schema, rec)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := avro.Marshal(v1.binary.Schema, rec)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // decode alternately, so each Writer's cache is warm
		m2, err := v2.binary.Decode(b2)
		if err != nil || m2["loyalty"] != int64(7) {
			t.Fatalf("v2: %v %v", m2["loyalty"], err)
		}
		m1, err := v1.binary.Decode(b1)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m1["loyalty"]; ok {
			t.Fatal("v1 record has v2's field")
		}
	}
}
