// Package limits states the bounds bqcdc checks a message and its schema
// against before it allocates or computes anything a message declares: a
// length, a count, a depth, a decimal scale. Every bound comes from one of
// two places: the size of a Pub/Sub message (nothing a message holds can be
// larger than the message), or a documented BigQuery limit (nothing BigQuery
// refuses is worth building). A message beyond a bound is dead-lettered with
// a reason that names the bound.
//
// The package is pure: constants and the error that names them.
package limits

import (
	"errors"
	"fmt"
)

// MaxMessageBytes bounds the data of one message: Pub/Sub accepts messages
// of up to 10 MB (https://cloud.google.com/pubsub/quotas, "Message size");
// 10 MiB is used so that either reading of "MB" is covered. No string,
// byte string or array in a message can be longer than the message itself.
const MaxMessageBytes = 10 << 20

// MaxZeroSizeItems bounds the array items of one Avro message that take no
// bytes at all (null, an empty record, fixed(0), or a record of those). They
// are the only values whose count the payload size does not bound: 7 bytes
// can declare 2^62 of them. No real row needs more than a few.
const MaxZeroSizeItems = 1 << 16

// MaxColumns is BigQuery's limit on the columns of a table, nested fields
// included (https://cloud.google.com/bigquery/quotas#table_limits: "Maximum
// number of columns in a table: 10,000").
const MaxColumns = 10_000

// MaxDescriptionLen is BigQuery's limit on a column description, in
// characters (https://cloud.google.com/bigquery/quotas#table_limits:
// "Maximum column description length: 1,024 characters"). Descriptions come
// from Avro doc, which Debezium fills from column comments of any length:
// longer ones are cut, not refused (a comment is no reason to lose a row).
const MaxDescriptionLen = 1024

// MaxRecordNesting is BigQuery's limit on nested RECORD (STRUCT) levels
// (https://cloud.google.com/bigquery/docs/nested-repeated: "up to 15 levels
// of nested RECORD types").
const MaxRecordNesting = 15

// MaxValueNesting bounds how deeply the values of one message nest: records,
// arrays, maps and unions, counted together, in Avro binary and in JSON. A
// BigQuery row nests at most MaxRecordNesting records; in Avro each level
// can cost a union, an array and a record, and the Debezium envelope (and a
// JSON wrapper) adds a few levels: 3×(15+1)+2 = 50, rounded up.
const MaxValueNesting = 64

// MaxSchemaNesting bounds how deeply a schema nests (records, arrays, maps
// and unions together), for the same reasons as MaxValueNesting. A Connect
// schema in JSON nests twice per level ({"type":"struct","fields":[...]});
// that is checked in its own terms by the JSON depth bound.
const MaxSchemaNesting = MaxValueNesting

// MaxJSONDepth bounds the nesting of a JSON message (objects and arrays). A
// JsonConverter message nests about two JSON levels per Connect level
// (a struct is an object holding a "fields" array), so twice
// MaxSchemaNesting.
const MaxJSONDepth = 2 * MaxSchemaNesting

// Decimal bounds. BigQuery's NUMERIC holds precision P and scale S with
// 0 ≤ S ≤ 9 and max(1,S) ≤ P ≤ S+29, BIGNUMERIC 0 ≤ S ≤ 38 and
// max(1,S) ≤ P ≤ S+38 (https://cloud.google.com/bigquery/docs/reference/standard-sql/data-types#parameterized_decimal_type;
// the REST reference of TableFieldSchema.precision states the stricter
// 1 ≤ P−S, which bqcdc's column parameters also satisfy). Wider decimals are
// kept as exact STRING text, so the bound on what a schema may declare is
// the widest decimal a source Debezium reads can hold: PostgreSQL's NUMERIC,
// whose declared precision is at most 1000 and scale between −1000 and 1000.
const (
	NumericMaxScale         = 9
	NumericMaxIntegerDigits = 29
	BigNumericMaxScale      = 38
	BigNumericMaxIntDigits  = 38

	MaxDecimalPrecision = 1000
	MaxDecimalScale     = 1000
)

// MaxNumberLen bounds the text of one JSON number: the widest decimal
// (MaxDecimalPrecision digits) plus a sign, a point and an exponent. Exact
// reading of a longer number costs time quadratic in its length.
const MaxNumberLen = MaxDecimalPrecision + 24

// MaxBitsLength bounds the declared length of io.debezium.data.Bits, whose
// values bqcdc pads to ceil(length/8) bytes: a BigQuery row (and so any one
// value) is at most 10 MB in the Storage Write API
// (https://cloud.google.com/bigquery/quotas#write-api-limits, "Maximum row
// size: 10 MB"); this equals PostgreSQL's own limit on BIT(n), 83,886,080.
const MaxBitsLength = 8 * MaxMessageBytes

// MaxRepeatedBitsLength bounds io.debezium.data.Bits inside an array or a
// map, where each element is padded: the padding of all elements together
// must stay within a small multiple of the payload, as decoding does.
const MaxRepeatedBitsLength = 64 * 8

// ErrLimit marks a message or schema refused because it goes beyond one of
// these bounds. It is permanent: the same bytes always exceed it.
var ErrLimit = errors.New("beyond bqcdc's limits")

// Errorf formats an error wrapping ErrLimit; the text should name the bound.
func Errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrLimit, fmt.Sprintf(format, args...))
}

// MaxRowBytes is the Storage Write API's limit on one row
// (https://cloud.google.com/bigquery/quotas#write-api-limits, "Maximum row
// size: 10 MB", read as 10^6 bytes, the stricter reading). A row over it is
// dead-lettered before the append: sent, BigQuery would refuse the whole
// request and the message would come back on every redelivery.
const MaxRowBytes = 10_000_000

// MaxVariableScale bounds the scale an io.debezium.data.VariableScaleDecimal
// value carries (every value carries its own): PostgreSQL keeps a NUMERIC's
// display scale in 14 bits (NUMERIC_DSCALE_MASK), so no source writes more
// than 16,383, and Oracle's NUMBER scale is -84 to 127. Formatting a value
// costs time and memory linear in its scale; a larger one is refused.
const MaxVariableScale = 16383
