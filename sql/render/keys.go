package render

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/civil"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// KeyFilter selects the state rows of the keys a compaction run touches by
// the first key column, the state's first clustering column: BigQuery
// prunes clustered blocks with constant filters only (not with a join or a
// subquery), so the run reads what its statistics returned (at most
// KeyRanges ranges of the values its new events carry, each one value while
// there are no more) as literals. The filter selects a superset of the
// touched keys; the statements join on the exact keys.
type KeyFilter struct {
	// Lo and Hi are the ranges' bounds, as the BigQuery client returns the
	// column's values.
	Lo, Hi []any
	// Null includes the rows whose first key column is NULL.
	Null bool
	// Buckets, of a state of buckets (flow.StateBucketsProperty), are the
	// touched keys' buckets: the filter selects their partitions (and the
	// NULL partition of truncates); of a state partitioned by key range,
	// the touched keys' ranges (RangeOf). nil: not known, no filter on
	// them.
	Buckets []int64
}

// keyFilterable reports whether the first key column of b can be filtered
// by ranges of literals: an orderable scalar this package renders.
func keyFilterable(b *flow.Bound) bool {
	c := b.Keys[0]
	if c.Repeated {
		return false
	}
	switch c.Type {
	case schema.Int64, schema.String, schema.Bytes, schema.Date, schema.Datetime, schema.Time, schema.Timestamp,
		schema.Numeric, schema.BigNumeric, schema.Bool:
		return true
	}
	return false
}

// sql renders the filter on b's state; "" for none (every row): the
// buckets' and the key ranges', both supersets of the touched keys' rows.
func (k *KeyFilter) sql(b *flow.Bound) (string, error) {
	if k == nil {
		return "", nil
	}
	keys, err := k.keySQL(b)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, s := range []string{k.bucketSQL(b), k.rangeSQL(b), keys} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " AND "), nil
}

// bucketSQL is the filter on the partitioning column of a state of
// buckets; "" without buckets. A flow with truncates reads the NULL
// partition too: its truncate rows carry no key.
func (k *KeyFilter) bucketSQL(b *flow.Bound) string {
	if b.StateBuckets == 0 || k.Buckets == nil {
		return ""
	}
	col := q(catalog.ColStateBucket)
	in := make([]string, len(k.Buckets))
	for i, v := range slices.Sorted(slices.Values(k.Buckets)) {
		in[i] = strconv.FormatInt(v, 10)
	}
	parts := inLists(col, in)
	if b.Truncate != "" {
		parts = append(parts, col+" IS NULL")
	}
	if len(parts) == 0 {
		return "FALSE"
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// rangeSQL is the filter on the partitioning column of a state partitioned
// by key range by the touched keys' ranges (Buckets), each run of
// neighbouring ranges one BETWEEN; "" where the key ranges (keySQL) are
// each one key, which selects no more. Past KeyRanges touched keys those
// ranges span many keys, and partitions between touched ones: this names
// the touched partitions exactly. The first range holds the keys below
// the state's range and the last those past it (RangeOf), so a run from
// the first has no low end and one to the last no high end.
func (k *KeyFilter) rangeSQL(b *flow.Bound) string {
	r := b.StateKeyRange
	if r == nil || k.Buckets == nil || !k.coarse() {
		return ""
	}
	col := q(b.Keys[0].Name)
	ps := slices.Sorted(slices.Values(k.Buckets))
	var parts []string
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		parts = append(parts, keyRangesSQL(b, ps[i], ps[j]))
		i = j + 1
	}
	if k.Null || b.Truncate != "" {
		parts = append(parts, col+" IS NULL")
	}
	if len(parts) == 0 {
		return "FALSE"
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// coarse reports whether a range of the filter spans more than one key.
func (k *KeyFilter) coarse() bool {
	for i := range k.Lo {
		if i < len(k.Hi) && fmt.Sprint(k.Lo[i]) != fmt.Sprint(k.Hi[i]) {
			return true
		}
	}
	return false
}

// keySQL renders the filter on b's first key column; "" for none (every
// row). A flow with truncates always reads the rows of NULL keys too: its
// truncate rows carry no key.
func (k *KeyFilter) keySQL(b *flow.Bound) (string, error) {
	if !keyFilterable(b) {
		return "", nil
	}
	if len(k.Lo) != len(k.Hi) {
		return "", fmt.Errorf("key filter of flow %s: %d lower and %d upper bounds", b.Name, len(k.Lo), len(k.Hi))
	}
	c := b.Keys[0]
	col := q(c.Name)
	ranges := make([][2]string, len(k.Lo))
	size := 0
	for i := range k.Lo {
		lo, err := keyLiteral(c, k.Lo[i])
		if err != nil {
			return "", fmt.Errorf("key filter of flow %s: %w", b.Name, err)
		}
		hi, err := keyLiteral(c, k.Hi[i])
		if err != nil {
			return "", fmt.Errorf("key filter of flow %s: %w", b.Name, err)
		}
		ranges[i] = [2]string{lo, hi}
		size += len(lo) + len(hi)
	}
	ranges = coarsen(ranges, size)
	var in, parts []string
	for _, r := range ranges {
		if r[0] == r[1] {
			in = append(in, r[0])
			continue
		}
		parts = append(parts, fmt.Sprintf("%s BETWEEN %s AND %s", col, r[0], r[1]))
	}
	parts = append(inLists(col, in), parts...)
	if k.Null || b.Truncate != "" {
		parts = append(parts, col+" IS NULL")
	}
	if len(parts) == 0 {
		return "FALSE", nil
	}
	return "(" + strings.Join(parts, " OR ") + ")", nil
}

// inLists renders col IN (values), as lists of at most maxInList values
// (to be joined by OR).
func inLists(col string, values []string) []string {
	var out []string
	for len(values) > 0 {
		n := min(len(values), maxInList)
		out = append(out, fmt.Sprintf("%s IN (%s)", col, strings.Join(values[:n], ", ")))
		values = values[n:]
	}
	return out
}

// maxInList bounds the values of one IN list of a key filter: the BigQuery
// emulator takes at most 999 (internal/emulator, concession 18); longer
// lists are written as several, joined by OR.
const maxInList = 512

// MaxKeyFilterBytes bounds the literals of a key filter: BigQuery refuses
// a query of more than 1 MB of text, and long keys (a 1 KB string) times
// KeyRanges would pass it.
const MaxKeyFilterBytes = 256 << 10

// coarsen merges neighbouring ranges (sorted, as the statistics return
// them) pairwise until their literals, size bytes, fit MaxKeyFilterBytes:
// a coarser filter reads more of the state, never less than it must.
func coarsen(ranges [][2]string, size int) [][2]string {
	for size > MaxKeyFilterBytes && len(ranges) > 1 {
		merged := ranges[:0:0]
		size = 0
		for i := 0; i < len(ranges); i += 2 {
			r := ranges[i]
			if i+1 < len(ranges) {
				r[1] = ranges[i+1][1]
			}
			merged = append(merged, r)
			size += len(r[0]) + len(r[1])
		}
		ranges = merged
	}
	return ranges
}

// keyLiteral renders a value of key column c, as the BigQuery client
// returns it, as a SQL literal of c's type. Strings and bytes are escaped;
// any other Go type is refused rather than formatted.
func keyLiteral(c schema.Column, v any) (string, error) {
	bad := func() (string, error) {
		return "", fmt.Errorf("a %T value of key column %s (%s) has no literal form", v, c.Name, c.SQLType())
	}
	switch c.Type {
	case schema.Int64:
		if n, ok := v.(int64); ok {
			return strconv.FormatInt(n, 10), nil
		}
	case schema.String:
		if s, ok := v.(string); ok {
			return flow.QuoteString(s), nil
		}
	case schema.Bytes:
		if bs, ok := v.([]byte); ok {
			var sb strings.Builder
			sb.WriteString("b'")
			for _, x := range bs {
				fmt.Fprintf(&sb, "\\x%02x", x)
			}
			sb.WriteString("'")
			return sb.String(), nil
		}
	case schema.Bool:
		if x, ok := v.(bool); ok {
			return strings.ToUpper(strconv.FormatBool(x)), nil
		}
	case schema.Date:
		if d, ok := v.(civil.Date); ok && d.IsValid() {
			return "DATE '" + d.String() + "'", nil
		}
	case schema.Datetime:
		if d, ok := v.(civil.DateTime); ok && d.IsValid() {
			return "DATETIME '" + d.Date.String() + " " + d.Time.String() + "'", nil
		}
	case schema.Time:
		if t, ok := v.(civil.Time); ok && t.IsValid() {
			return "TIME '" + t.String() + "'", nil
		}
	case schema.Timestamp:
		if t, ok := v.(time.Time); ok {
			return Literal(t), nil
		}
	case schema.Numeric, schema.BigNumeric:
		if r, ok := v.(*big.Rat); ok && r != nil {
			digits := 9
			if c.Type == schema.BigNumeric {
				digits = 38
			}
			return c.Type + " '" + r.FloatString(digits) + "'", nil
		}
	}
	return bad()
}
