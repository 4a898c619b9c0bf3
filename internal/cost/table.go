package cost

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// DefaultBlockBytes is the block size the table builders use when given 0.
// BigQuery sizes a table's storage blocks adaptively (by table size and
// write pattern) and does not document how; the model makes the size an
// explicit parameter. Smaller blocks make clustering prune more finely.
const DefaultBlockBytes = 1 << 20

// A Table is what the model knows of a BigQuery table: its columns with
// their logical bytes per row, its partitioning column (by day, or an INT64
// column by ranges of one value; "" for none) and first clustering column
// ("" for none), and its blocks.
type Table struct {
	Name      string // as statements spell it, its parts joined by '.': project.dataset.table
	Columns   []Column
	Partition string
	Cluster   string
	Blocks    []Block
	// Ranges, of a table partitioned by an INT64 column: partition Day
	// holds values from RangeStart + Day × Ranges to the next's start
	// (0: ranges of one value, Day the value).
	Ranges, RangeStart int64
}

// A Column is a column of a table and its average logical bytes per row
// (see ColumnBytes).
type Column struct {
	Name  string
	Type  string // schema type (schema.Timestamp, ...): literals compared with it are coerced to it
	Bytes float64
}

// A Block is a run of rows stored together. BigQuery keeps per block the
// range of the clustering columns and prunes the blocks a constant filter
// rules out; a partitioned table's blocks each belong to one partition.
type Block struct {
	Rows int64
	// Day is the block's partition, days since 1970-01-01 of the
	// partitioning column's value (of an INT64 partitioning column,
	// partitioned by ranges of one value: the value), when NullPartition
	// is false.
	Day           int64
	NullPartition bool
	// Min and Max bound the first clustering column's non-NULL values in the
	// block (both NULL: it has none); Nulls: it also holds NULLs.
	Min, Max Value
	Nulls    bool
}

// Partition names a day partition, an integer range partition of one
// value (Day is the value), or the NULL partition.
type Partition struct {
	Day  int64
	Null bool
}

// DayOf is the partition of a TIMESTAMP or DATE partitioning value.
func DayOf(t time.Time) Partition { return Partition{Day: floorDiv(t.UTC().Unix(), 86400)} }

// NewTable returns an empty table of the given columns.
func NewTable(name string, cols []Column, partition, cluster string) *Table {
	return &Table{Name: name, Columns: cols, Partition: partition, Cluster: cluster}
}

// Columns returns the model columns of a schema, each with the bytes per
// row ColumnBytesOf gives for its shape (shapes by column name; a column
// without one is shaped def).
func Columns(cols schema.Columns, shapes map[string]Shape, def Shape) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		s, ok := shapes[c.Name]
		if !ok {
			s = def
		}
		out[i] = Column{Name: c.Name, Type: c.Type, Bytes: ColumnBytesOf(c, s)}
		if c.Repeated {
			out[i].Type = "ARRAY"
		}
	}
	return out
}

// RowBytes is the logical bytes of a row: the sum of its columns'.
func (t *Table) RowBytes() float64 {
	var n float64
	for _, c := range t.Columns {
		n += c.Bytes
	}
	return n
}

// Rows is the table's row count.
func (t *Table) Rows() int64 {
	var n int64
	for _, b := range t.Blocks {
		n += b.Rows
	}
	return n
}

// Bytes is the table's logical size.
func (t *Table) Bytes() float64 { return float64(t.Rows()) * t.RowBytes() }

func (t *Table) column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}

// AddSpan appends rows of partition p sorted by the clustering column,
// whose values are spread evenly from lo to hi (both NULL: every row's is
// NULL), cut into blocks of blockBytes (0: DefaultBlockBytes). Values of
// the clustering column must be of a kind that interpolates (INT64, DATE,
// DATETIME, TIME, TIMESTAMP), or lo must equal hi.
func (t *Table) AddSpan(p Partition, lo, hi Value, rows int64, blockBytes int64) error {
	if rows <= 0 {
		return nil
	}
	if blockBytes <= 0 {
		blockBytes = DefaultBlockBytes
	}
	per := int64(math.Max(1, math.Floor(float64(blockBytes)/math.Max(t.RowBytes(), 1))))
	if lo.k != hi.k {
		return fmt.Errorf("table %s: span from %s to %s: values of two types", t.Name, lo, hi)
	}
	same := lo.k == vNull
	if !same {
		c, _ := compare(lo, hi)
		same = c == 0
	}
	if !same {
		switch lo.k {
		case vInt, vDate, vDatetime, vTime, vTimestamp:
		default:
			return fmt.Errorf("table %s: values %s to %s do not interpolate", t.Name, lo, hi)
		}
	}
	at := func(r int64) Value { // the clustering value of the span's r-th row
		if same || rows == 1 {
			return lo
		}
		v := lo
		v.i = lo.i + int64(math.Round(float64(hi.i-lo.i)*float64(r)/float64(rows-1)))
		return v
	}
	for start := int64(0); start < rows; start += per {
		end := min(start+per, rows)
		b := Block{Rows: end - start, Day: p.Day, NullPartition: p.Null}
		if lo.k == vNull {
			b.Nulls = true
		} else {
			b.Min, b.Max = at(start), at(end-1)
		}
		t.Blocks = append(t.Blocks, b)
	}
	return nil
}

// AddTimeRange appends rows whose partitioning column, a TIMESTAMP that is
// also the clustering column (or the table is not clustered), is spread
// evenly over [from, to): each day's rows go to the day's partition,
// sorted, in blocks of blockBytes (0: DefaultBlockBytes). This is how the
// changelog (by _cdc_ingested_at) and the change table (by
// _commit_position) are laid out.
func (t *Table) AddTimeRange(from, to time.Time, rows int64, blockBytes int64) error {
	if t.Partition == "" || t.Cluster != "" && !strings.EqualFold(t.Cluster, t.Partition) {
		return fmt.Errorf("table %s: AddTimeRange needs a table partitioned by the column it is clustered by", t.Name)
	}
	if !to.After(from) || rows <= 0 {
		return nil
	}
	total := to.Sub(from)
	var done int64
	for day := from.UTC().Truncate(24 * time.Hour); day.Before(to); day = day.Add(24 * time.Hour) {
		lo, hi := maxTime(day, from), minTime(day.Add(24*time.Hour), to)
		end := int64(math.Round(float64(rows) * float64(hi.Sub(from)) / float64(total)))
		n := end - done
		done = end
		if n <= 0 {
			continue
		}
		last := hi.Add(-time.Microsecond)
		if err := t.AddSpan(DayOf(day), Timestamp(lo), Timestamp(last), n, blockBytes); err != nil {
			return err
		}
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// A Shape is what a column's values are like on average.
type Shape struct {
	Len   float64 // bytes of each STRING, BYTES or JSON value in it (UTF-8 text for JSON)
	Elems float64 // elements of an ARRAY column per row
	Null  float64 // the fraction of rows where the column is NULL (0 to 1)
}

// ColumnBytes is a column's logical bytes per row when its STRING, BYTES and
// JSON values are avgLen bytes long (an ARRAY holding one element).
func ColumnBytes(c schema.Column, avgLen float64) float64 {
	return ColumnBytesOf(c, Shape{Len: avgLen, Elems: 1})
}

// ColumnBytesOf is a column's logical bytes per row by BigQuery's
// documented data sizes: INT64, FLOAT64, DATE, DATETIME, TIME and
// TIMESTAMP 8 bytes; NUMERIC 16; BIGNUMERIC 32; BOOL 1; STRING and BYTES 2
// plus the length; JSON the length of its text; STRUCT the sum of its
// fields; ARRAY the sum of its elements; NULL 0. GEOGRAPHY is taken as Len
// bytes.
func ColumnBytesOf(c schema.Column, s Shape) float64 {
	v := valueBytes(c, s)
	if c.Repeated {
		v *= s.Elems
	}
	return v * (1 - s.Null)
}

func valueBytes(c schema.Column, s Shape) float64 {
	switch c.Type {
	case schema.Int64, schema.Float64, schema.Date, schema.Datetime, schema.Time, schema.Timestamp:
		return 8
	case schema.Numeric:
		return 16
	case schema.BigNumeric:
		return 32
	case schema.Bool:
		return 1
	case schema.String, schema.Bytes:
		return 2 + s.Len
	case schema.JSON, schema.Geography:
		return s.Len
	case schema.Record:
		var n float64
		for _, f := range c.Fields {
			n += ColumnBytesOf(f, Shape{Len: s.Len, Elems: s.Elems})
		}
		return n
	}
	return 8
}
