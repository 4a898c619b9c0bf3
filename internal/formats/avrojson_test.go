package formats

import (
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/dev/avrocases"
	"github.com/google/go-cmp/cmp"
	"github.com/hamba/avro/v2"
)

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
	r := revisionFor(t, avrocases.CustomerV2)
	for _, tc := range avrocases.JSONCases {
		t.Run(tc.Name, func(t *testing.T) {
			bin, err := avro.Marshal(r.binary.Schema, tc.Rec)
			if err != nil {
				t.Fatal(err)
			}
			fromBinary, err := r.binary.Decode(bin)
			if err != nil {
				t.Fatal(err)
			}
			fromJSON, err := r.json.Decode([]byte(tc.JSON))
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
	r := revisionFor(t, avrocases.CustomerV2)
	good := avrocases.JSONCases[0].JSON
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

	bin, err := avro.Marshal(r.binary.Schema, avrocases.JSONCases[0].Rec)
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
	v1, v2 := revisionFor(t, avrocases.CustomerV1), revisionFor(t, avrocases.CustomerV2)
	rec := avrocases.JSONCases[0].Rec
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
