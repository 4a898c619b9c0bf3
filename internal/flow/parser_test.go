package flow

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseBothSpellings(t *testing.T) {
	src := `-- customers, current state
CREATE FLOW customers_current AS AUTO CDC INTO customers
FROM STREAM(` + "`dbserver1.inventory.customers`" + `)      -- the topic
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id)
STORED AS SCD TYPE 1;

/* the Databricks spelling, clauses in another order */
APPLY CHANGES INTO LIVE.users_history
FROM STREAM(live.users)
STORED AS SCD TYPE 2
SEQUENCE BY STRUCT(sequenceNum, seq2)
KEYS (userId, region)
TRACK HISTORY ON * EXCEPT (city)
IGNORE NULL UPDATES ON (name)
WHERE region <> 'test'
COLUMNS userId, region, name, city;
`
	flows, err := Parse("f.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 2 {
		t.Fatalf("got %d flows", len(flows))
	}
	a, b := flows[0], flows[1]
	opts := cmp.Options{cmpopts.IgnoreFields(Flow{}, "clauses"), cmpopts.IgnoreUnexported(Expr{}), cmpopts.IgnoreFields(Ident{}, "Pos"),
		cmpopts.IgnoreFields(ColumnSpec{}, "Pos"), cmpopts.IgnoreFields(Target{}, "Pos"), cmpopts.IgnoreFields(Expr{}, "Pos")}
	wantA := &Flow{Pos: Pos{"f.sql", 2, 1}, Spelling: "AUTO CDC", Name: "customers_current", Target: Target{Table: "customers"},
		Source: Ident{Name: "dbserver1.inventory.customers"}, Keys: []Ident{{Name: "id"}}, Sequence: []Ident{{Name: "_cdc_sequence"}},
		Columns: &ColumnSpec{All: true, Except: []Ident{{Name: "_cdc_message_id"}}}, DeleteWhen: &Expr{}, SCDType: 1}
	if d := cmp.Diff(wantA, a, opts); d != "" {
		t.Errorf("AUTO CDC flow (-want +got):\n%s", d)
	}
	wantB := &Flow{Pos: Pos{"f.sql", 11, 1}, Spelling: "APPLY CHANGES", Name: "users_history", Target: Target{Table: "users_history"},
		Source: Ident{Name: "users"}, Keys: []Ident{{Name: "userId"}, {Name: "region"}},
		Sequence: []Ident{{Name: "sequenceNum"}, {Name: "seq2"}}, SequenceStruct: true,
		Columns:      &ColumnSpec{List: []Ident{{Name: "userId"}, {Name: "region"}, {Name: "name"}, {Name: "city"}}},
		Where:        &Expr{},
		SCDType:      2,
		TrackHistory: &ColumnSpec{All: true, Except: []Ident{{Name: "city"}}},
		IgnoreNull:   &ColumnSpec{List: []Ident{{Name: "name"}}}}
	if d := cmp.Diff(wantB, b, opts); d != "" {
		t.Errorf("APPLY CHANGES flow (-want +got):\n%s", d)
	}
	if a.DeleteWhen.Pos != (Pos{"f.sql", 5, 22}) {
		t.Errorf("DELETE WHEN condition at %v", a.DeleteWhen.Pos)
	}
}

func TestParseErrors(t *testing.T) {
	head := "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(`topic.x`)\n"
	tests := []struct {
		name, src, want string
	}{
		{"no keys", head + "SEQUENCE BY s;", "f.sql:1:1: flow f has no KEYS"},
		{"no sequence", head + "KEYS (id);", "f.sql:1:1: flow f has no SEQUENCE BY"},
		{"track history with scd1", head + "KEYS (id) SEQUENCE BY s\nTRACK HISTORY ON (a);", "f.sql:3:1: TRACK HISTORY ON needs STORED AS SCD TYPE 2"},
		{"truncate with scd2", head + "KEYS (id) SEQUENCE BY s STORED AS SCD TYPE 2\nAPPLY AS TRUNCATE WHEN op = 'T';", "f.sql:3:1: APPLY AS TRUNCATE WHEN is only supported with SCD TYPE 1"},
		{"empty keys", head + "KEYS () SEQUENCE BY s;", "f.sql:2:6: KEYS needs at least one column"},
		{"empty except", head + "KEYS (id) SEQUENCE BY s COLUMNS * EXCEPT ();", "f.sql:2:42: COLUMNS * EXCEPT needs at least one column"},
		{"duplicate clause", head + "KEYS (id) KEYS (x) SEQUENCE BY s;", "f.sql:2:11: KEYS given twice (first at line 2, column 1)"},
		{"duplicate key column", head + "KEYS (id, ID) SEQUENCE BY s;", "f.sql:2:11: column ID listed twice in KEYS"},
		{"scd type 3", head + "KEYS (id) SEQUENCE BY s STORED AS SCD TYPE 3;", "f.sql:2:44: SCD TYPE must be 1 or 2"},
		{"unterminated", head + "KEYS (id) SEQUENCE BY s", "f.sql:2:24: flow f is not terminated"},
		{"unknown clause", head + "KEYS (id) PARTITION BY x;", "f.sql:2:11: expected a clause"},
		{"bad topic", "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(`goog-x`) KEYS (id) SEQUENCE BY s;", "f.sql:1:46: source \"goog-x\" is not a valid Pub/Sub topic id"},
		{"bad spelling", "CREATE FLOW f AS CDC INTO t FROM STREAM(x1y) KEYS(id) SEQUENCE BY s;", "f.sql:1:18: expected AUTO CDC INTO or APPLY CHANGES INTO"},
		{"unbalanced", head + "KEYS (id) SEQUENCE BY s WHERE (a = 1;", "f.sql:2:37: unbalanced parentheses in WHERE condition"},
		{"unterminated string", head + "KEYS (id) SEQUENCE BY s WHERE a = 'x;\n", "f.sql:2:35: unterminated string"},
		{"three-part target", "CREATE FLOW f AS AUTO CDC INTO p.d.t FROM STREAM(abc) KEYS(id) SEQUENCE BY s;", "f.sql:1:32: target \"p.d.t\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.sql", tt.src)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant prefix %q", err, tt.want)
			}
		})
	}
}

func TestParseReportsEveryBadStatement(t *testing.T) {
	src := "CREATE FLOW a AS AUTO CDC INTO t1 FROM STREAM(abc) SEQUENCE BY s;\n" +
		"CREATE FLOW b AS AUTO CDC INTO t2 FROM STREAM(abc) KEYS (id) SEQUENCE BY s;\n" +
		"CREATE FLOW c AS AUTO CDC INTO t3 FROM STREAM(abc) KEYS (id);\n"
	flows, err := Parse("f.sql", src)
	list, ok := err.(ErrorList)
	if !ok || len(list) != 2 || list[0].Pos.Line != 1 || list[1].Pos.Line != 3 {
		t.Fatalf("errors = %v", err)
	}
	if len(flows) != 1 || flows[0].Name != "b" {
		t.Errorf("good flow not kept: %v", flows)
	}
}

func TestParseFilesDuplicates(t *testing.T) {
	srcs := map[string]string{
		"a.sql": "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(abc) KEYS (id) SEQUENCE BY s;",
		"b.sql": "CREATE FLOW f AS AUTO CDC INTO u FROM STREAM(abc) KEYS (id) SEQUENCE BY s;\nAPPLY CHANGES INTO t FROM STREAM(abc) KEYS (id) SEQUENCE BY s;",
	}
	_, err := ParseFiles([]string{"a.sql", "b.sql"}, srcs)
	if err == nil {
		t.Fatal("duplicates accepted")
	}
	for _, want := range []string{"b.sql:1:1: flow name f is already used at a.sql:1:1", "b.sql:2:20: target t is already written by flow f at a.sql:1:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

var usersChangelog = schema.Columns{
	{Name: "userId", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "city", Type: schema.String},
	{Name: "operation", Type: schema.String}, {Name: "sequenceNum", Type: schema.Int64},
	{Name: "tags", Type: schema.String, Repeated: true}, {Name: "score", Type: schema.Float64},
	{Name: "select", Type: schema.String}, {Name: "addr", Type: schema.Record, Fields: []schema.Column{{Name: "zip", Type: schema.String}}},
	{Name: "_cdc_op", Type: schema.String}, {Name: "_cdc_sequence", Type: schema.String}, {Name: "_cdc_message_id", Type: schema.String},
}

func bind(t *testing.T, src string) (*Bound, error) {
	t.Helper()
	flows, err := Parse("u.sql", src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return Bind(flows[0], usersChangelog)
}

func TestBind(t *testing.T) {
	b, err := bind(t, `CREATE FLOW users_h AS AUTO CDC INTO users FROM STREAM(users_topic)
		KEYS (userId) SEQUENCE BY sequenceNum
		APPLY AS DELETE WHEN operation = "DELETE" AND addr.zip IS NOT NULL
		WHERE SAFE_CAST(sequenceNum AS STRING) NOT IN ('0', 'it\'s') OR `+"`select`"+` LIKE '%x'
		COLUMNS * EXCEPT (operation, sequenceNum, tags)
		STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city) IGNORE NULL UPDATES;`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Output.Names(), []string{"userId", "name", "city", "score", "select", "addr", "_cdc_op", "_cdc_sequence", "_cdc_message_id"}; !cmp.Equal(got, want) {
		t.Errorf("output = %v, want %v", got, want)
	}
	if want := []string{"name", "score", "select", "addr"}; !cmp.Equal(b.Tracked, want) {
		t.Errorf("tracked = %v, want %v", b.Tracked, want)
	}
	if want := []string{"name", "city", "score", "select", "addr"}; !cmp.Equal(b.IgnoreNull, want) {
		t.Errorf("ignore null = %v, want %v", b.IgnoreNull, want)
	}
	if want := "`operation` = 'DELETE' AND `addr`.`zip` IS NOT NULL"; b.Delete != want {
		t.Errorf("delete = %s\nwant     %s", b.Delete, want)
	}
	// String literals are decoded and re-escaped, never copied through.
	if want := "SAFE_CAST(`sequenceNum` AS STRING) NOT IN ('0', 'it\\'s') OR `select` LIKE '%x'"; b.Where != want {
		t.Errorf("where = %s\nwant    %s", b.Where, want)
	}
}

func TestBindErrors(t *testing.T) {
	head := "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users_topic)\n"
	tests := []struct{ name, src, want string }{
		{"unknown key", head + "KEYS (user_id) SEQUENCE BY sequenceNum;", "u.sql:2:7: unknown column user_id in KEYS: the changelog of users_topic has userId, name"},
		{"suggestion", head + "KEYS (userId) SEQUENCE BY sequenceNun;", "(did you mean sequenceNum?)"},
		{"unorderable sequence", head + "KEYS (userId) SEQUENCE BY tags;", "u.sql:2:27: sequence column tags is ARRAY<STRING>, which BigQuery cannot order"},
		{"float key", head + "KEYS (score) SEQUENCE BY sequenceNum;", "u.sql:2:7: key column score is FLOAT64, which cannot identify a row"},
		{"key excluded", head + "KEYS (userId) SEQUENCE BY sequenceNum COLUMNS * EXCEPT (userId);", "u.sql:2:7: key column userId is not among the target's COLUMNS"},
		{"track key", head + "KEYS (userId) SEQUENCE BY sequenceNum STORED AS SCD TYPE 2 TRACK HISTORY ON (userId);", "u.sql:2:78: TRACK HISTORY ON names key column userId"},
		{"track excluded", head + "KEYS (userId) SEQUENCE BY sequenceNum COLUMNS (userId, name) STORED AS SCD TYPE 2 TRACK HISTORY ON (city);", "TRACK HISTORY ON names city, which the target does not show"},
		{"track nothing", head + "KEYS (userId) SEQUENCE BY sequenceNum COLUMNS (userId, name) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (name);", "TRACK HISTORY ON selects no column"},
		{"condition column", head + "KEYS (userId) SEQUENCE BY sequenceNum APPLY AS DELETE WHEN op = 'd';", "u.sql:2:60: unknown column op in APPLY AS DELETE WHEN"},
		{"subquery", head + "KEYS (userId) SEQUENCE BY sequenceNum WHERE userId IN (SELECT 1);", "u.sql:2:56: WHERE condition may not use SELECT"},
		{"reserved column unquoted", head + "KEYS (userId) SEQUENCE BY sequenceNum WHERE city = 'x' OR FROM = 1;", "WHERE condition may not use FROM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bind(t, tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant %q", err, tt.want)
			}
		})
	}
}

func TestQuoting(t *testing.T) {
	if got := QuoteIdent("a`b"); got != "`a\\`b`" {
		t.Errorf("QuoteIdent = %s", got)
	}
	if got := QuoteString("it's\n\\"); got != `'it\'s\n\\'` {
		t.Errorf("QuoteString = %s", got)
	}
}
