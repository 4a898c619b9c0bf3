package cost

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	eventDays    = 10
	eventsPerDay = 100_000
	eventKeys    = 1_000_000
)

// events is `p`.`d`.`events`: 10 days of 100,000 rows, partitioned by day
// of ts and clustered by id (each day's rows sorted by id, ids 0 to
// 999,999), 128 bytes a row.
func events(t *testing.T) *Table {
	t.Helper()
	cols := []Column{
		{Name: "id", Type: schema.Int64, Bytes: ColumnBytes(schema.Column{Type: schema.Int64}, 0)},
		{Name: "name", Type: schema.String, Bytes: ColumnBytes(schema.Column{Type: schema.String}, 10)},
		{Name: "ts", Type: schema.Timestamp, Bytes: 8},
		{Name: "payload", Type: schema.String, Bytes: ColumnBytes(schema.Column{Type: schema.String}, 98)},
	}
	tb := NewTable("p.d.events", cols, "ts", "id")
	for d := range eventDays {
		if err := tb.AddSpan(DayOf(day0.AddDate(0, 0, d)), Int(0), Int(eventKeys-1), eventsPerDay, 0); err != nil {
			t.Fatal(err)
		}
	}
	return tb
}

// small is `p`.`d`.`small`: 1,000 rows of 16 bytes, neither partitioned
// nor clustered.
func small(name string) *Table {
	tb := NewTable(name, []Column{{Name: "k", Type: schema.Int64, Bytes: 8}, {Name: "v", Type: schema.Int64, Bytes: 8}}, "", "")
	if err := tb.AddSpan(Partition{}, Null, Null, 1000, 0); err != nil {
		panic(err)
	}
	return tb
}

func estimate(t *testing.T, m *Model, sql string) Statement {
	t.Helper()
	e, err := m.Estimate(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(e.Statements) != 1 {
		t.Fatalf("%s: %d statements", sql, len(e.Statements))
	}
	return e.Statements[0]
}

func mbUp(n int64) int64 { return (n + MB - 1) / MB * MB }

const rowsAll = eventDays * eventsPerDay

func TestColumnBytes(t *testing.T) {
	for _, tt := range []struct {
		c    schema.Column
		len  float64
		want float64
	}{
		{schema.Column{Type: schema.Int64}, 0, 8},
		{schema.Column{Type: schema.Float64}, 0, 8},
		{schema.Column{Type: schema.Date}, 0, 8},
		{schema.Column{Type: schema.Datetime}, 0, 8},
		{schema.Column{Type: schema.Time}, 0, 8},
		{schema.Column{Type: schema.Timestamp}, 0, 8},
		{schema.Column{Type: schema.Numeric}, 0, 16},
		{schema.Column{Type: schema.BigNumeric}, 0, 32},
		{schema.Column{Type: schema.Bool}, 0, 1},
		{schema.Column{Type: schema.String}, 10, 12},
		{schema.Column{Type: schema.Bytes}, 16, 18},
		{schema.Column{Type: schema.JSON}, 40, 40},
		{schema.Column{Type: schema.Record, Fields: []schema.Column{{Type: schema.Int64}, {Type: schema.String}}}, 4, 14},
	} {
		if got := ColumnBytes(tt.c, tt.len); got != tt.want {
			t.Errorf("ColumnBytes(%s, %v) = %v, want %v", tt.c.SQLType(), tt.len, got, tt.want)
		}
	}
	arr := schema.Column{Type: schema.String, Repeated: true}
	if got := ColumnBytesOf(arr, Shape{Len: 6, Elems: 3}); got != 24 {
		t.Errorf("ARRAY<STRING> of 3 six-byte strings = %v bytes, want 24", got)
	}
	if got := ColumnBytesOf(schema.Column{Type: schema.Int64}, Shape{Null: 0.25}); got != 6 {
		t.Errorf("INT64 NULL in a quarter of the rows = %v bytes a row, want 6", got)
	}
}

// Selecting one column bills that column only, over the whole table.
func TestOneColumnBillsThatColumn(t *testing.T) {
	m := NewModel(events(t))
	s := estimate(t, m, "SELECT name FROM `p`.`d`.`events`")
	u := s.Table("p.d.events")
	if want := int64(rowsAll * 12); u.ScannedBytes != want {
		t.Errorf("scanned %d, want %d (name's 12 bytes a row)", u.ScannedBytes, want)
	}
	if strings.Join(u.Columns, ",") != "name" {
		t.Errorf("columns %v, want [name]", u.Columns)
	}
	if s.Billed != mbUp(rowsAll*12) {
		t.Errorf("billed %d, want %d", s.Billed, mbUp(rowsAll*12))
	}
}

// SELECT * bills every column, and LIMIT does not reduce it.
func TestStarBillsEveryColumnAndLimitNothing(t *testing.T) {
	m := NewModel(events(t))
	all := estimate(t, m, "SELECT * FROM `p.d.events`")
	if want := int64(rowsAll * 128); all.Table("p.d.events").ScannedBytes != want {
		t.Errorf("SELECT * scanned %d, want %d", all.Table("p.d.events").ScannedBytes, want)
	}
	limited := estimate(t, m, "SELECT * FROM `p`.`d`.`events` LIMIT 10")
	if limited.Billed != all.Billed {
		t.Errorf("LIMIT 10 billed %d, SELECT * %d: LIMIT reduces nothing", limited.Billed, all.Billed)
	}
	except := estimate(t, m, "SELECT * EXCEPT (payload) FROM `p`.`d`.`events` e")
	if want := int64(rowsAll * 28); except.Table("p.d.events").ScannedBytes != want {
		t.Errorf("SELECT * EXCEPT (payload) scanned %d, want %d", except.Table("p.d.events").ScannedBytes, want)
	}
	// A * inside a CTE whose rows the statement uses by name reads the
	// columns named.
	cte := estimate(t, m, "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT id, COUNT(*) FROM x GROUP BY id")
	if u := cte.Table("p.d.events"); u.ScannedBytes != rowsAll*8 || strings.Join(u.Columns, ",") != "id" {
		t.Errorf("* in a CTE read %v (%d bytes), want id only", u.Columns, u.ScannedBytes)
	}
	// ... but all of them when its rows reach the result.
	through := estimate(t, m, "WITH x AS (SELECT * FROM `p`.`d`.`events`) SELECT * FROM (SELECT * FROM x)")
	if through.Table("p.d.events").ScannedBytes != rowsAll*128 {
		t.Errorf("* through a CTE and a subquery to the result scanned %d, want every column", through.Table("p.d.events").ScannedBytes)
	}
}

// Words that are no column: a typed literal's type, a function's name.
func TestTypedLiteralsNameNoColumn(t *testing.T) {
	tb := NewTable("p.d.t", []Column{{Name: "timestamp", Type: schema.Timestamp, Bytes: 8}, {Name: "date", Type: schema.Date, Bytes: 8}, {Name: "v", Type: schema.Int64, Bytes: 8}}, "", "")
	if err := tb.AddSpan(Partition{}, Null, Null, 10, 0); err != nil {
		t.Fatal(err)
	}
	s := estimate(t, NewModel(tb), "SELECT v FROM `p`.`d`.`t` WHERE v > UNIX_SECONDS(TIMESTAMP '2026-01-01') AND DATE(v) = DATE '2026-01-01'")
	if u := s.Table("p.d.t"); strings.Join(u.Columns, ",") != "v" {
		t.Errorf("columns %v, want [v]", u.Columns)
	}
}

// A filter on a column that is neither the partitioning nor the first
// clustering column prunes nothing: it is billed for the columns it reads.
func TestFilterOnOtherColumnPrunesNothing(t *testing.T) {
	m := NewModel(events(t))
	s := estimate(t, m, "SELECT id FROM `p`.`d`.`events` WHERE name = 'x' AND payload IS NULL")
	u := s.Table("p.d.events")
	if u.BlocksKept != u.BlocksTotal {
		t.Errorf("kept %d of %d blocks", u.BlocksKept, u.BlocksTotal)
	}
	if want := int64(rowsAll * (8 + 12 + 100)); u.ScannedBytes != want {
		t.Errorf("scanned %d, want %d (id, name, payload)", u.ScannedBytes, want)
	}
}

// A constant filter on the partitioning column reads only its partitions.
func TestPartitionFilterPrunes(t *testing.T) {
	m := NewModel(events(t))
	perDay := int64(eventsPerDay * (12 + 8)) // name, and ts of the WHERE
	for _, tt := range []struct {
		where string
		days  int64
	}{
		{"ts >= TIMESTAMP '2026-01-08 00:00:00+00:00'", 3},
		{"ts > TIMESTAMP '2026-01-08 23:59:59.999999 UTC'", 2},
		{"TIMESTAMP '2026-01-03' > ts", 2},
		{"ts BETWEEN TIMESTAMP '2026-01-02 10:00:00' AND TIMESTAMP '2026-01-03 01:00:00' AND name != 'x'", 2},
		{"ts IN (TIMESTAMP '2026-01-01 12:00:00', TIMESTAMP '2026-01-05 00:00:00-01:00')", 2},
		{"(ts < TIMESTAMP '2026-01-02' OR ts >= TIMESTAMP '2026-01-10')", 2},
		{"ts > '2026-01-09'", 2}, // a string literal coerced to TIMESTAMP
		{"ts IS NULL", 0},
		{"ts >= IFNULL(NULL, TIMESTAMP '2026-01-10')", 1},
		{"(ts <= CAST(NULL AS TIMESTAMP) OR CAST(NULL AS TIMESTAMP) IS NULL) AND ts > TIMESTAMP '2026-01-09'", 2},
		{"ts < TIMESTAMP '2026-01-05' AND ts > TIMESTAMP '2026-01-06'", 0},
		{"e.ts >= TIMESTAMP '2026-01-10'", 1},
		{"ts > TIMESTAMP '2026-01-09' OR name = 'x'", 10},
	} {
		s := estimate(t, m, "SELECT name FROM `p`.`d`.`events` AS e WHERE "+tt.where)
		want := tt.days * perDay
		if got := s.Table("p.d.events").ScannedBytes; got != want {
			t.Errorf("WHERE %s: scanned %d, want %d (%d days)", tt.where, got, want, tt.days)
		}
	}
}

// A filter with a subquery prunes nothing, even a constant one: BigQuery
// prunes with constant expressions only.
func TestSubqueryFilterPrunesNothing(t *testing.T) {
	m := NewModel(events(t), small("p.d.small"))
	for _, where := range []string{
		"ts > (SELECT TIMESTAMP '2026-01-09')",
		"ts > (SELECT MAX(ts) FROM `p`.`d`.`events`)",
		"id IN (SELECT k FROM `p`.`d`.`small`)",
		"ts > @since",
	} {
		s := estimate(t, m, "SELECT name FROM `p`.`d`.`events` WHERE "+where)
		u := s.Table("p.d.events")
		if u.BlocksKept != u.BlocksTotal {
			t.Errorf("WHERE %s kept %d of %d blocks", where, u.BlocksKept, u.BlocksTotal)
		}
	}
}

// A constant filter on the first clustering column reads the blocks whose
// range holds its values; a join on it prunes nothing.
func TestClusteringFilterPrunesBlocks(t *testing.T) {
	m := NewModel(events(t), small("p.d.small"))
	tb := m.Tables["p.d.events"]
	perDay := len(tb.Blocks) / eventDays
	s := estimate(t, m, "SELECT payload FROM `p`.`d`.`events` WHERE `id` = 500000")
	u := s.Table("p.d.events")
	if u.BlocksKept < eventDays || u.BlocksKept > 2*eventDays {
		t.Errorf("id = 500000 kept %d of %d blocks, want one (or two) a day", u.BlocksKept, u.BlocksTotal)
	}
	if u.ScannedBytes >= int64(rowsAll*100)/int64(perDay)*2 {
		t.Errorf("id = 500000 scanned %d bytes, more than two blocks a day", u.ScannedBytes)
	}
	ranged := estimate(t, m, "SELECT payload FROM `p`.`d`.`events` WHERE id BETWEEN 0 AND 99999 AND ts >= TIMESTAMP '2026-01-10'")
	if got := ranged.Table("p.d.events").BlocksKept; got < 1 || got > perDay/5 {
		t.Errorf("a tenth of the ids on one day kept %d blocks, want about %d", got, perDay/10)
	}
	ors := estimate(t, m, "SELECT payload FROM `p`.`d`.`events` WHERE (id IN (1, 2) OR id BETWEEN 999990 AND 999999 OR id IS NULL)")
	if got := ors.Table("p.d.events").BlocksKept; got != 2*eventDays {
		t.Errorf("the first and last ids kept %d blocks, want %d (first and last of each day)", got, 2*eventDays)
	}
	joined := estimate(t, m, "SELECT e.payload FROM `p`.`d`.`events` AS e JOIN `p`.`d`.`small` AS s ON e.id = s.k WHERE e.id = s.v")
	if u := joined.Table("p.d.events"); u.BlocksKept != u.BlocksTotal {
		t.Errorf("a filter on another table's column kept %d of %d blocks", u.BlocksKept, u.BlocksTotal)
	}
}

// Each table read is billed at least 10 MB, and the total is rounded up to
// a whole MB.
func TestMinimumPerTableAndRounding(t *testing.T) {
	m := NewModel(small("p.d.a"), small("p.d.b"))
	one := estimate(t, m, "SELECT k FROM `p`.`d`.`a`")
	if u := one.Table("p.d.a"); u.ScannedBytes != 8000 || u.BilledBytes != MinPerTable || one.Billed != MinPerTable {
		t.Errorf("8,000 bytes scanned: table billed %d, statement %d; want 10 MB", u.BilledBytes, one.Billed)
	}
	two := estimate(t, m, "SELECT a.k FROM `p`.`d`.`a` AS a JOIN `p`.`d`.`b` AS b USING (k)")
	if two.Billed != 2*MinPerTable {
		t.Errorf("two small tables billed %d, want 20 MB", two.Billed)
	}
	self := estimate(t, m, "SELECT k FROM `p`.`d`.`a` WHERE v > (SELECT MIN(v) FROM `p`.`d`.`a`)")
	if self.Billed != MinPerTable || len(self.Tables) != 1 || self.Tables[0].ScannedBytes != 16000 {
		t.Errorf("one table read twice: %s; want it billed once, 10 MB", self.Summary())
	}
	big := NewModel(events(t))
	odd := estimate(t, big, "SELECT payload FROM `p`.`d`.`events`")
	if odd.Billed%MB != 0 || odd.Billed < rowsAll*100 || odd.Billed-rowsAll*100 >= MB {
		t.Errorf("100,000,000 bytes billed as %d, want rounded up to a whole MB", odd.Billed)
	}
	script, err := m.Estimate("SELECT k FROM `p`.`d`.`a`; SELECT v FROM `p`.`d`.`b`;")
	if err != nil || len(script.Statements) != 2 || script.Billed != 2*MinPerTable {
		t.Errorf("a script of two statements: %+v, %v; want 20 MB", script, err)
	}
}

// INSERT ... SELECT is billed for its SELECT; the target is not read.
func TestInsertBillsItsSelect(t *testing.T) {
	m := NewModel(events(t), small("p.d.a"))
	s := estimate(t, m, "INSERT INTO `p`.`d`.`a` (k, v) SELECT id, id FROM `p`.`d`.`events` WHERE ts >= TIMESTAMP '2026-01-10'")
	if u := s.Table("p.d.a"); !u.Target || u.ScannedBytes != 0 {
		t.Errorf("target: %+v", u)
	}
	if got := s.Table("p.d.events").ScannedBytes; got != eventsPerDay*16 {
		t.Errorf("the SELECT scanned %d, want %d (id and ts of one day)", got, eventsPerDay*16)
	}
	if s.Billed != MinPerTable {
		t.Errorf("billed %d, want 10 MB", s.Billed)
	}
	values := estimate(t, m, "INSERT INTO `p`.`d`.`a` (k, v) VALUES (1, 2)")
	if values.Billed != 0 {
		t.Errorf("INSERT VALUES billed %d, want 0", values.Billed)
	}
}

// DELETE is billed for what it reads plus the partitions it modifies, every
// column; one whose WHERE only filters the partitioning column by a
// constant drops whole partitions for free.
func TestDeleteOfWholePartitionsIsFree(t *testing.T) {
	m := NewModel(events(t), small("p.d.a"))
	dayBytes := int64(eventsPerDay * 128)
	free := estimate(t, m, "DELETE FROM `p`.`d`.`events` WHERE `ts` < TIMESTAMP '2026-01-04 00:00:00+00:00'")
	if free.Billed != 0 {
		t.Errorf("deleting three whole days billed %d, want 0: %s", free.Billed, free.Summary())
	}
	part := estimate(t, m, "DELETE FROM `p`.`d`.`events` WHERE ts < TIMESTAMP '2026-01-04 12:00:00'")
	if u := part.Table("p.d.events"); u.RewriteBytes != dayBytes || u.ReadBytes != eventsPerDay*8 {
		t.Errorf("deleting 3.5 days: %+v; want day 4 read (ts) and rewritten (every column), days 1-3 free", u)
	}
	other := estimate(t, m, "DELETE FROM `p`.`d`.`events` WHERE ts < TIMESTAMP '2026-01-04' AND name = 'x'")
	if u := other.Table("p.d.events"); u.RewriteBytes != 3*dayBytes || u.ReadBytes != 3*eventsPerDay*(8+12) {
		t.Errorf("a DELETE that also filters another column: %+v; want three days read and rewritten", u)
	}
	unpart := estimate(t, m, "DELETE FROM `p`.`d`.`a` WHERE k = 1")
	if u := unpart.Table("p.d.a"); u.ReadBytes != 8000 || u.RewriteBytes != 16000 {
		t.Errorf("a DELETE of an unpartitioned table: %+v; want k read and the whole table billed", u)
	}
	sub := estimate(t, m, "DELETE FROM `p`.`d`.`events` WHERE ts < (SELECT TIMESTAMP '2026-01-04')")
	if u := sub.Table("p.d.events"); u.RewriteBytes != 10*dayBytes {
		t.Errorf("a DELETE by a subquery: %+v; want every partition billed", u)
	}
}

// UNION ALL operands are separate scopes: each one's WHERE prunes its own
// table.
func TestUnionOperandsAreSeparateScopes(t *testing.T) {
	m := NewModel(events(t), small("p.d.a"))
	s := estimate(t, m, `SELECT id AS k FROM `+"`p`.`d`.`events`"+` WHERE ts >= TIMESTAMP '2026-01-10'
UNION ALL
SELECT k FROM `+"`p`.`d`.`a`"+` WHERE v > 3
UNION DISTINCT
(SELECT name FROM `+"`p`.`d`.`events`"+` WHERE ts < TIMESTAMP '2026-01-02')`)
	u := s.Table("p.d.events")
	if want := int64(eventsPerDay * (8 + 8 + 12 + 8)); u.ScannedBytes != want || strings.Join(u.Columns, ",") != "id,name,ts" {
		t.Errorf("events: %+v; want id and ts of one day, name and ts of another (%d bytes)", u, want)
	}
	if u := s.Table("p.d.a"); strings.Join(u.Columns, ",") != "k,v" {
		t.Errorf("a: %+v; want k, v", u)
	}
}

func TestLiterals(t *testing.T) {
	p := func(sql string) (Value, bool) {
		toks, err := lex(sql)
		if err != nil {
			t.Fatal(err)
		}
		matchParens(toks)
		return (&pruner{toks: toks}).constant(0, len(toks))
	}
	r, _ := new(big.Rat).SetString("12.5")
	for _, tt := range []struct {
		sql  string
		want Value
	}{
		{"TIMESTAMP '2026-11-30 07:09:00.123456+00:00'", Timestamp(time.Date(2026, 11, 30, 7, 9, 0, 123456000, time.UTC))},
		{"TIMESTAMP '1970-01-01 00:00:00+00'", Timestamp(time.Unix(0, 0))},
		{"TIMESTAMP '2026-11-30 09:00:00+02:00'", Timestamp(time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC))},
		{"DATE '2020-01-01'", Date(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"42", Int(42)},
		{"-7", Int(-7)},
		{`'a\'b'`, String("a'b")},
		{`"x\\y"`, String(`x\y`)},
		{`b'\x00\xff'`, Bytes([]byte{0, 0xff})},
		{"TRUE", Bool(true)},
		{"NUMERIC '12.5'", Numeric(r)},
		{"IFNULL(TIMESTAMP '2026-01-02', TIMESTAMP '1970-01-01 00:00:00+00')", Timestamp(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))},
		{"CAST(NULL AS TIMESTAMP)", Null},
	} {
		got, ok := p(tt.sql)
		if c, cok := compare(got, tt.want); !ok || got.k != tt.want.k || (!got.IsNull() && (!cok || c != 0)) {
			t.Errorf("%s = %v (%v), want %v", tt.sql, got, ok, tt.want)
		}
	}
	for _, sql := range []string{"@x", "ts", "(SELECT 1)", "CURRENT_TIMESTAMP()", "1 + 1"} {
		if v, ok := p(sql); ok {
			t.Errorf("%s is no constant, got %v", sql, v)
		}
	}
}

// Table builders: rows spread over days sorted by the clustering column,
// in blocks of the size given.
func TestBuilders(t *testing.T) {
	cols := []Column{{Name: "ts", Type: schema.Timestamp, Bytes: 8}, {Name: "v", Type: schema.String, Bytes: 1016}}
	tb := NewTable("p.d.log", cols, "ts", "ts")
	if err := tb.AddTimeRange(day0, day0.Add(36*time.Hour), 3000, 512*1024); err != nil {
		t.Fatal(err)
	}
	if tb.Rows() != 3000 || len(tb.Blocks) != 6 {
		t.Fatalf("%d rows in %d blocks, want 3000 in 6 (2,000 + 1,000 rows of 1 KiB, 512 a block)", tb.Rows(), len(tb.Blocks))
	}
	if tb.Blocks[0].Day != DayOf(day0).Day || tb.Blocks[5].Day != DayOf(day0).Day+1 {
		t.Errorf("partitions %d..%d", tb.Blocks[0].Day, tb.Blocks[5].Day)
	}
	for i := 1; i < len(tb.Blocks); i++ {
		if c, _ := compare(tb.Blocks[i-1].Max, tb.Blocks[i].Min); c >= 0 {
			t.Errorf("blocks %d and %d overlap: %v >= %v", i-1, i, tb.Blocks[i-1].Max, tb.Blocks[i].Min)
		}
	}
	m := NewModel(tb)
	s := estimate(t, m, "SELECT v FROM `p`.`d`.`log` WHERE ts > TIMESTAMP '2026-01-01 23:00:00'")
	if u := s.Table("p.d.log"); u.BlocksKept != 3 {
		t.Errorf("the last hour of day 1 and day 2 kept %d blocks, want 3 (the day's last, and day 2's two)", u.BlocksKept)
	}
	if err := NewTable("x", cols, "", "v").AddSpan(Partition{}, String("a"), String("b"), 10, 0); err == nil {
		t.Error("strings were interpolated")
	}
}

func TestRefusals(t *testing.T) {
	m := NewModel(small("p.d.a"))
	for _, sql := range []string{
		"SELECT * FROM `p`.`d`.`missing`",
		"MERGE `p`.`d`.`a` t USING `p`.`d`.`a` s ON t.k = s.k WHEN MATCHED THEN DELETE",
		"SELECT * FROM `p`.`d`.`fn`(1)",
		"SELECT 'unterminated",
	} {
		if _, err := m.Estimate(sql); err == nil {
			t.Errorf("%s: no error", sql)
		}
	}
}

// An INT64 partitioning column in ranges of one value (a state of
// buckets): constant filters on it prune partitions exactly, whatever the
// blocks, and a DELETE of whole buckets is free.
func TestIntegerRangePartitionsPrune(t *testing.T) {
	cols := []Column{{Name: "id", Type: schema.Int64, Bytes: 8}, {Name: "v", Type: schema.Int64, Bytes: 8}, {Name: "b", Type: schema.Int64, Bytes: 8}}
	tb := NewTable("p.d.buckets", cols, "b", "id")
	const buckets, perBucket = 100, 10_000
	for b := range int64(buckets) {
		// Each bucket's keys spread over the whole key range (a hash), in one
		// block of 256 MiB: blocks prune nothing, partitions do.
		if err := tb.AddSpan(Partition{Day: b}, Int(0), Int(999_999), perBucket, 256<<20); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.AddSpan(Partition{Null: true}, Null, Null, 10, 0); err != nil {
		t.Fatal(err)
	}
	m := NewModel(tb)
	for _, tt := range []struct {
		where string
		parts int64
	}{
		{"b IN (3, 7, 99)", 3},
		{"b = 5 AND id BETWEEN 10 AND 20", 1},
		{"(b IN (1, 2) OR b IS NULL)", 2},
		{"b BETWEEN 10 AND 19", 10},
		{"id = 5", buckets},
	} {
		s := estimate(t, m, "SELECT v FROM `p`.`d`.`buckets` WHERE "+tt.where)
		used := int64(16) // v, and b or id of the WHERE
		if strings.Contains(tt.where, "b ") && strings.Contains(tt.where, "id ") {
			used = 24
		}
		want := tt.parts * perBucket * used
		if strings.Contains(tt.where, "IS NULL") {
			want += 10 * used
		}
		if got := s.Table("p.d.buckets").ScannedBytes; got != want {
			t.Errorf("WHERE %s: scanned %d, want %d (%d partitions)", tt.where, got, want, tt.parts)
		}
	}
	if free := estimate(t, m, "DELETE FROM `p`.`d`.`buckets` WHERE b IN (1, 2)"); free.Billed != 0 {
		t.Errorf("deleting two whole buckets billed %d, want 0: %s", free.Billed, free.Summary())
	}
}

// An INT64 partitioning column in ranges of many values (a state
// partitioned by ranges of its key, clustered by it): a filter on the key
// prunes to the partitions its values fall in, whatever the blocks (the
// table is not clustered here: the partitions alone prune).
func TestIntegerRangesOfManyValuesPrune(t *testing.T) {
	cols := []Column{{Name: "id", Type: schema.Int64, Bytes: 8}, {Name: "v", Type: schema.Int64, Bytes: 8}}
	tb := NewTable("p.d.ranges", cols, "id", "")
	tb.Ranges, tb.RangeStart = 1_000, -500
	const parts = 100
	for p := range int64(parts) {
		if err := tb.AddSpan(Partition{Day: p}, Null, Null, tb.Ranges, 256<<20); err != nil {
			t.Fatal(err)
		}
	}
	m := NewModel(tb)
	for _, tt := range []struct {
		where string
		parts int64
	}{
		{"id = 5", 1},
		{"id IN (-500, 499, 500, 98_499)", 3},
		{"id BETWEEN 0 AND 2_500", 4},
		{"v = 1", parts},
	} {
		s := estimate(t, m, "SELECT v FROM `p`.`d`.`ranges` WHERE "+strings.ReplaceAll(tt.where, "_", ""))
		used := int64(16) // v and id
		if !strings.Contains(tt.where, "id") {
			used = 8
		}
		if got, want := s.Table("p.d.ranges").ScannedBytes, tt.parts*tb.Ranges*used; got != want {
			t.Errorf("WHERE %s: scanned %d, want %d (%d partitions)", tt.where, got, want, tt.parts)
		}
	}
}
