package flow

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Safety round 4 (issue 38): what a careless teammate writes is refused at
// its position, in bounded memory, with a message that says what is wrong
// and is short.

// A flow file saved with a UTF-8 byte-order mark parses (before:
// "unexpected character '\ufeff'").
func TestByteOrderMark(t *testing.T) {
	flows, err := Parse("bom.sql", "\ufeff"+`CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;`)
	if err != nil || len(flows) != 1 {
		t.Fatalf("%v, %d flows", err, len(flows))
	}
	if p := flows[0].Pos; p.Line != 1 || p.Col != 1 {
		t.Errorf("the flow starts at %s, want 1:1 (the mark is not a character of the text)", p)
	}
}

// A missing ';' between two flows names both, and the second is read on
// its own (before: the second was dropped without a word).
func TestMissingSemicolon(t *testing.T) {
	for _, second := range []string{
		"CREATE FLOW b AS AUTO CDC INTO b FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;",
		"APPLY CHANGES INTO b FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;",
	} {
		for _, lastClause := range []string{"SEQUENCE BY sequenceNum", "SEQUENCE BY sequenceNum WHERE operation != 'x'"} {
			src := "CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (userId) " + lastClause + "\n" + second
			flows, err := Parse("m.sql", src)
			if err == nil || !strings.Contains(err.Error(), "flow a: missing ';' before") || !strings.Contains(err.Error(), "INTO b") && !strings.Contains(err.Error(), "FLOW b") {
				t.Errorf("%q: %v, want flow a refused naming the statement of b", src, err)
			}
			if len(flows) != 1 || flows[0].Target.Table != "b" {
				t.Errorf("%q: flows %v, want b read on its own", src, flows)
			}
		}
	}
}

// allocated is what f allocates, in bytes.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Nesting and size are bounded: a million nested parentheses (a 2 MB
// file; before: ~700 MB) are refused at the first parenthesis past the
// bound, a file past MaxFileBytes at its start without being read whole,
// a file of more than MaxTokens tokens at the first it does not read; the
// memory each takes is bounded.
func TestInputBounds(t *testing.T) {
	const where = "CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum WHERE "
	deep := where +
		strings.Repeat("(", 1_000_000) + "TRUE" + strings.Repeat(")", 1_000_000) + ";\n" +
		"CREATE FLOW b AS AUTO CDC INTO b FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;"
	var flows []*Flow
	var err error
	if n := allocated(func() { flows, err = Parse("deep.sql", deep) }); n > 64<<20 {
		t.Errorf("a million nested parentheses allocated %d MB", n>>20)
	}
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("deep.sql:1:%d:", len(where)+1+MaxNesting)) || !strings.Contains(err.Error(), "nested deeper than") {
		t.Errorf("deep nesting: %.300v", err)
	}
	if len(flows) != 1 || flows[0].Name != "b" {
		t.Errorf("the flow after the deep one: %v", flows)
	}

	dir := t.TempDir()
	big, err := os.Create(filepath.Join(dir, "big.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(16 * MaxFileBytes); err != nil { // sparse: no disk
		t.Fatal(err)
	}
	big.Close()
	var errs []error
	if n := allocated(func() { _, errs = ParseDir(dir) }); n > 6*MaxFileBytes {
		t.Errorf("reading a file past the bound allocated %d MB", n>>20)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "big.sql:1:1: flow file of") {
		t.Errorf("a file past MaxFileBytes: %v", errs)
	}

	commas := where + "TRUE" + strings.Repeat(" OR TRUE", MaxTokens/2+10)
	if n := allocated(func() { _, err = Parse("commas.sql", commas) }); n > 300<<20 {
		t.Errorf("a file of %d tokens allocated %d MB", MaxTokens+10, n>>20)
	}
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("too many tokens: %.300v", err)
	}
}

// COLUMNS naming 10,000 unknown columns is one short error with a count
// and the first few (before: 3.4 MB, each line listing every column).
func TestManyUnknownColumns(t *testing.T) {
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("nope_%d", i)
	}
	for _, clause := range []string{"COLUMNS (userId, " + strings.Join(names, ", ") + ")", "COLUMNS * EXCEPT (" + strings.Join(names, ", ") + ")"} {
		_, err := bind(t, "CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum "+clause+";")
		if err == nil {
			t.Fatalf("%.40s...: bound", clause)
		}
		if len(err.Error()) > 4096 || !strings.Contains(err.Error(), "10000 unknown columns") || !strings.Contains(err.Error(), "nope_0, nope_1") {
			t.Errorf("%.40s...: %d bytes: %.300s", clause, len(err.Error()), err)
		}
	}
}

// Conditions are typed when the flow is bound and must be BOOL, refused at
// their position with the type found (before: they passed render and
// failed in BigQuery at apply); conditions that are BOOL, or that the
// typer cannot type, pass.
func TestConditionsAreBool(t *testing.T) {
	const head = "CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum "
	for _, c := range []struct{ clause, found string }{
		{"APPLY AS DELETE WHEN sequenceNum", "INT64"},
		{"APPLY AS DELETE WHEN 'yes'", "STRING"},
		{"APPLY AS DELETE WHEN sequenceNum + 1", "INT64"},
		{"APPLY AS DELETE WHEN score * 2", "a number"},
		{"APPLY AS TRUNCATE WHEN name", "STRING"},
		{"APPLY AS TRUNCATE WHEN (city || 'x')", "STRING"},
		{"WHERE LOWER(operation)", "STRING"},
		{"WHERE tags", "ARRAY<STRING>"},
		{"WHERE 1.5", "FLOAT64"},
		{"WHERE CAST(sequenceNum AS STRING)", "STRING"},
	} {
		_, err := bind(t, head+c.clause+";")
		want := fmt.Sprintf("needs a BOOL condition, found %s", c.found)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "u.sql:1:") {
			t.Errorf("%s: %v, want %q at its position", c.clause, err, want)
		}
	}
	for _, ok := range []string{
		"APPLY AS DELETE WHEN operation = 'DELETE'", "APPLY AS DELETE WHEN NOT (operation != 'DELETE')",
		"APPLY AS DELETE WHEN operation IS NULL", "WHERE (sequenceNum > 1 AND city LIKE 'a%')",
		"WHERE TRUE", "WHERE CASE WHEN city = 'x' THEN TRUE ELSE FALSE END", "WHERE IF(city = 'x', TRUE, FALSE)",
		"WHERE STARTS_WITH(city, 'a')", "WHERE sequenceNum + 1 > 2", "WHERE city || 'x' = 'ax'", "WHERE CAST(city AS BOOL)",
		"WHERE operation IN ('a', 'b')", "WHERE sequenceNum BETWEEN 1 AND 3", "WHERE addr.zip = '1'", "WHERE NULL",
	} {
		if _, err := bind(t, head+ok+";"); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ view, want string }{
		{"SELECT region, COUNT(*) AS n FROM orders GROUP BY region HAVING n", "HAVING needs a BOOL condition, found INT64"},
		{"SELECT region, SUM(qty) AS n FROM orders GROUP BY region HAVING n + 1", "HAVING needs a BOOL condition, found INT64"},
		{"SELECT region, COUNT(*) AS n FROM orders WHERE region GROUP BY region", "WHERE needs a BOOL condition, found STRING"},
		{"SELECT region, COUNT(*) OVER (PARTITION BY region) AS n FROM orders GROUP BY region", "window functions are not supported"},
	} {
		_, err := bindGold(t, "CREATE MATERIALIZED VIEW v AS "+c.view+";")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "materialized view v:") {
			t.Errorf("%s: %v, want %q about materialized view v", c.view, err, c.want)
		}
	}
	if _, err := bindGold(t, "CREATE MATERIALIZED VIEW v AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region HAVING n > 1;"); err != nil {
		t.Errorf("a BOOL HAVING: %v", err)
	}
}
