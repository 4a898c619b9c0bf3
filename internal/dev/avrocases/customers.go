// Package avrocases holds the Avro test records that more than one package
// checks its decoders with (formats and pubsubschema): one record of every
// type and logical type Pub/Sub schemas allow, in two revisions, and its
// Avro JSON encodings; and Parse, the schema parser those tests share.
// Test files cannot cross packages, so they live here.
package avrocases

import (
	"math"
	"math/big"
	"strings"
	"time"
)

// JSONCase is a record and its Avro JSON encoding.
type JSONCase struct {
	Name string
	Rec  Customer
	JSON string
}

// CustomerV2 has one field of every Avro type and logical type Pub/Sub
// schemas allow; CustomerV1 is the same record one revision earlier.
const CustomerV2 = `{"type":"record","name":"Customer","namespace":"com.example","fields":[
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

var CustomerV1 = strings.Replace(CustomerV2, `,
 {"name":"loyalty","type":"long","default":0}`, "", 1)

type Address struct {
	Street string  `avro:"street"`
	Zip    *string `avro:"zip"`
}

type Customer struct {
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
	Address   *Address         `avro:"address"`
	Note      any              `avro:"note"`
	UID       string           `avro:"uid"`
	Loyalty   int64            `avro:"loyalty"`
}

func ptr[T any](v T) *T { return &v }

func rat(s string) *big.Rat {
	r, _ := new(big.Rat).SetString(s)
	return r
}

// JSONCases pairs records with their Avro JSON encoding, as Pub/Sub
// delivers it for a topic with encoding JSON.
var JSONCases = []JSONCase{
	{
		Name: "every branch set",
		Rec: Customer{ID: 1005, Email: "sarah@example.com", Tier: ptr("gold"), Balance: rat("1234.56"),
			BirthDate: time.Date(2022, 1, 8, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2024, 5, 6, 9, 8, 9, 123456000, time.UTC),
			OpensAt: 9 * time.Hour, Score: 98.5, Ratio: 0.25, Active: true, Photo: []byte{0, 0xff, 0x10}, Code: [4]byte{'A', 'B', 0, 0xff},
			Status: "ACTIVE", Tags: []string{"a", "b"}, Attrs: map[string]int64{"x": 1, "y": -2},
			Address: &Address{Street: "1 Main St", Zip: ptr("0150")}, Note: int64(42),
			UID: "7d444840-9dc0-11d1-b245-5ffdce74fad2", Loyalty: 7},
		JSON: `{"id":1005,"email":"sarah@example.com","tier":{"string":"gold"},"balance":{"bytes":"\u0001\u00e2@"},
			"birth_date":19000,"updated_at":1714986489123456,"opens_at":32400000,"score":98.5,"ratio":0.25,"active":true,
			"photo":"\u0000\u00ff\u0010","code":"AB\u0000\u00ff","status":"ACTIVE","tags":["a","b"],"attrs":{"x":1,"y":-2},
			"address":{"com.example.Address":{"street":"1 Main St","zip":{"string":"0150"}}},"note":{"long":42},
			"uid":"7d444840-9dc0-11d1-b245-5ffdce74fad2","loyalty":7}`,
	},
	{
		Name: "nulls and edge values",
		Rec: Customer{ID: -7, Email: "", Balance: rat("-0.05"), BirthDate: time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
			UpdatedAt: time.UnixMicro(-1000).UTC(), Score: 1e300, Ratio: -1.5, Photo: []byte{}, Status: "CLOSED",
			Tags: []string{}, Attrs: map[string]int64{}, Address: &Address{Street: "x"}, Note: "hi", Loyalty: math.MinInt64},
		JSON: `{"id":-7,"email":"","tier":null,"balance":{"bytes":"\u00fb"},"birth_date":-1,"updated_at":-1000,"opens_at":0,
			"score":1e300,"ratio":-1.5,"active":false,"photo":"","code":"\u0000\u0000\u0000\u0000","status":"CLOSED",
			"tags":[],"attrs":{},"address":{"com.example.Address":{"street":"x","zip":null}},"note":{"string":"hi"},
			"uid":"","loyalty":-9223372036854775808}`,
	},
	{
		// Bare values for single-branch unions, short names in wrappers and
		// a missing field with a default are read leniently.
		Name: "lenient forms and defaults",
		Rec: Customer{ID: 1, Email: "e", Tier: ptr("silver"), BirthDate: time.Unix(0, 0).UTC(), UpdatedAt: time.Unix(0, 0).UTC(),
			Tags: []string{}, Attrs: map[string]int64{}, Address: &Address{Street: "s", Zip: ptr("z")}, Status: "ACTIVE",
			Photo: []byte{}},
		JSON: `{"id":1,"email":"e","tier":"silver","balance":null,"birth_date":0,"updated_at":0,"opens_at":0,"score":0,
			"ratio":0,"active":false,"photo":"","code":"\u0000\u0000\u0000\u0000","status":"ACTIVE","tags":[],"attrs":{},
			"address":{"Address":{"street":"s","zip":"z"}},"note":null,"uid":"","unknown":[1,2,3]}`,
	},
}
