package cdc

import (
	"strings"
	"testing"
)

func source(file string, pos int64, row int) map[string]any {
	return map[string]any{
		"version": "2.7.0", "connector": "mysql", "name": "dbserver1", "ts_ms": int64(1700000000123),
		"snapshot": "false", "db": "inventory", "table": "customers", "server_id": int64(223344),
		"file": file, "pos": pos, "row": row, "ts_us": int64(1700000000123456),
	}
}

func TestEditImage(t *testing.T) {
	env := `{"type":"record","name":"Envelope","fields":[
 {"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"int"}]}]},
 {"name":"after","type":["null","Value"]},{"name":"op","type":"string"}]}`
	got, err := EditImage([]byte(env), func(f []any) []any {
		return append(f, map[string]any{"name": "note", "type": []any{"null", "string"}, "default": nil})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `"fields":[{"name":"id","type":"int"},{"default":null,"name":"note","type":["null","string"]}]`) {
		t.Errorf("edited schema = %s", got)
	}
	if _, err := EditImage([]byte(`{"type":"record","name":"Plain","fields":[]}`), nil); err == nil {
		t.Error("a schema without a before record was edited")
	}
}

// Log-position layouts: connector names match in any case, and a change
// whose block is null (or names another connector) is refused when the
// schema's source is MySQL's, MariaDB's or PostgreSQL's: the timestamp
// layout it would get sorts after every binlog position of its changelog.
func TestLogPositionSources(t *testing.T) {
	for _, c := range []string{"MySQL", "MYSQL", "MariaDB"} {
		src := mysqlSrc("false", "mysql-bin.000003", 154, 0, nil)
		_, want, err := sourcePosition(src, OpUpdate)
		if err != nil {
			t.Fatal(err)
		}
		src["connector"] = c
		if _, got, err := sourcePosition(src, OpUpdate); err != nil || got != want {
			t.Errorf("connector %s: sequence %s, %v; want the binlog layout %s", c, got, err, want)
		}
	}
	pg := pgSrc("false", `["100","200"]`, int64(5), int64(200))
	_, want, _ := sourcePosition(pg, OpUpdate)
	pg["connector"] = "PostgreSQL"
	if _, got, err := sourcePosition(pg, OpUpdate); err != nil || got != want {
		t.Errorf("connector PostgreSQL: sequence %s, %v; want %s", got, err, want)
	}
	src := source("mysql-bin.000003", 4, 0)
	src["file"] = ""
	src["connector"] = "MySQL"
	if _, _, err := sourcePosition(src, OpUpdate); err == nil {
		t.Error("connector MySQL without a usable position: accepted with the timestamp layout")
	}

}

// TestOp pins the codes: an Op round-trips through its code, and every other
// code, including the empty one, is OpNone, whose code is empty.
func TestOp(t *testing.T) {
	for _, op := range []Op{OpCreate, OpUpdate, OpDelete, OpRead, OpTruncate} {
		if got := ParseOp(op.String()); got != op || len(op.String()) != 1 {
			t.Errorf("%d: code %q parses as %d", op, op.String(), got)
		}
		if got := ParseOp([]byte(op.String())); got != op {
			t.Errorf("%d: bytes %q parse as %d", op, op.String(), got)
		}
	}
	for _, code := range []string{"", "x", "C", "cc", "u\x00"} {
		if got := ParseOp(code); got != OpNone {
			t.Errorf("code %q parses as %d, want OpNone", code, got)
		}
	}
	if OpNone.String() != "" || Op(200).String() != "" || OpNone.ImageField() != "" || OpTruncate.ImageField() != "" {
		t.Error("OpNone or a truncate names a code or an image")
	}
	if OpDelete.ImageField() != "before" || OpRead.ImageField() != "after" {
		t.Error("delete must store before, read after")
	}
}
