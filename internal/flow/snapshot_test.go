package flow

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
)

// TestParseSnapshotSpellings: every spelling of AUTO CDC FROM SNAPSHOT
// parses to a snapshot flow reading a dataset.table, in any clause order.
func TestParseSnapshotSpellings(t *testing.T) {
	src := "CREATE FLOW a AS AUTO CDC FROM SNAPSHOT INTO ta FROM staging.customers KEYS (id) VERSION BY loaded_at STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (note);\n" +
		"APPLY CHANGES FROM SNAPSHOT INTO tb FROM `staging.customer extracts` VERSION BY run KEYS (id, region);\n" +
		"AUTO CDC FROM SNAPSHOT INTO analytics.tc FROM `staging`.`c-2` KEYS (id) VERSION BY v COLUMNS (id, name) WHERE name IS NOT NULL;\n" +
		"CREATE FLOW d AS APPLY CHANGES FROM SNAPSHOT INTO td FROM staging.d KEYS (id) VERSION BY v;\n" +
		"CREATE OR REFRESH STREAMING TABLE te FLOW AUTO CDC FROM SNAPSHOT staging.e KEYS (id) VERSION BY v STORED AS SCD TYPE 1;\n" +
		"AUTO CDC INTO tf FROM SNAPSHOT KEYS (id) SEQUENCE BY s; -- a topic named SNAPSHOT\n"
	flows, err := Parse("s.sql", src)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Name, Spelling, Target, Table, Topic, Version string
		SCD                                           int
	}
	var got []summary
	for _, f := range flows {
		s := summary{Name: f.Name, Spelling: f.Spelling, Target: f.Target.String(), Topic: f.Source.Name, SCD: f.SCDType}
		if f.Snapshot != nil {
			s.Table = f.Snapshot.String()
			s.Version = f.Version.Name
		}
		got = append(got, s)
	}
	want := []summary{
		{"a", "AUTO CDC", "ta", "staging.customers", "", "loaded_at", 2},
		{"tb", "APPLY CHANGES", "tb", "staging.customer extracts", "", "run", 1},
		{"tc", "AUTO CDC", "analytics.tc", "staging.c-2", "", "v", 1},
		{"d", "APPLY CHANGES", "td", "staging.d", "", "v", 1},
		{"te", "AUTO CDC", "te", "staging.e", "", "v", 1},
		{"tf", "AUTO CDC", "tf", "", "SNAPSHOT", "", 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("flows (-want +got):\n%s", d)
	}
	if k := flows[0].SourceKey(); k != "table:staging.customers" {
		t.Errorf("source key = %q", k)
	}
	if got := Sources(flows); !cmp.Equal(got, []string{"SNAPSHOT"}) {
		t.Errorf("Sources = %v: snapshot flows read no topic", got)
	}
	if got := KeysBySource(flows); len(got) != 1 || len(got["SNAPSHOT"]) != 1 {
		t.Errorf("KeysBySource = %v: snapshot flows read no topic", got)
	}
	if got := ForSource(flows, ""); len(got) != 0 {
		t.Errorf("ForSource(\"\") = %v", got)
	}
	if got := SnapshotTables(flows); len(got) != 5 || got[1].Table != "customer extracts" {
		t.Errorf("SnapshotTables = %v", got)
	}
	if s := flows[0].String(); !strings.Contains(s, "FROM SNAPSHOT INTO ta FROM staging.customers KEYS (id) VERSION BY loaded_at STORED AS SCD TYPE 2") {
		t.Errorf("String() = %s", s)
	}
}

func TestParseSnapshotErrors(t *testing.T) {
	head := "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM staging.snap\n"
	checkParseErrors(t, []parseErrorCase{
		{"no version", head + "KEYS (id);", "f.sql:1:53: flow f: AUTO CDC FROM SNAPSHOT needs VERSION BY column"},
		{"no keys", head + "VERSION BY v;", "f.sql:1:1: flow f: no KEYS"},
		{"sequence by", head + "KEYS (id) VERSION BY v SEQUENCE BY s;", "f.sql:2:24: flow f: SEQUENCE BY is not supported with AUTO CDC FROM SNAPSHOT"},
		{"delete when", head + "KEYS (id) VERSION BY v APPLY AS DELETE WHEN op = 'd';", "f.sql:2:24: flow f: APPLY AS DELETE WHEN is not supported with AUTO CDC FROM SNAPSHOT: a key missing"},
		{"truncate when", head + "KEYS (id) VERSION BY v APPLY AS TRUNCATE WHEN op = 't';", "f.sql:2:24: flow f: APPLY AS TRUNCATE WHEN is not supported with AUTO CDC FROM SNAPSHOT"},
		{"ignore null", head + "KEYS (id) VERSION BY v IGNORE NULL UPDATES;", "f.sql:2:24: flow f: IGNORE NULL UPDATES is not supported with AUTO CDC FROM SNAPSHOT"},
		{"system sequence", head + "KEYS (id) VERSION BY v SYSTEM SEQUENCE BY s STORED AS BITEMPORAL;", "f.sql:2:24: flow f: SYSTEM SEQUENCE BY is not supported with AUTO CDC FROM SNAPSHOT"},
		{"bitemporal", head + "KEYS (id) VERSION BY v STORED AS BITEMPORAL;", "f.sql:2:24: flow f: STORED AS BITEMPORAL is not supported with AUTO CDC FROM SNAPSHOT"},
		{"track history with scd1", head + "KEYS (id) VERSION BY v TRACK HISTORY ON (a);", "f.sql:2:24: flow f: TRACK HISTORY ON needs STORED AS SCD TYPE 2"},
		{"version twice", head + "KEYS (id) VERSION BY v VERSION BY w;", "f.sql:2:24: flow f: VERSION BY given twice"},
		{"struct version", head + "KEYS (id) VERSION BY STRUCT(a, b);", "f.sql:2:22: flow f: VERSION BY takes one column"},
		{"one-part table", "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM snap KEYS (id) VERSION BY v;", "f.sql:1:53: flow f: snapshot table \"snap\": write dataset.table"},
		{"three-part table", "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM p.staging.snap KEYS (id) VERSION BY v;", "f.sql:1:53: flow f: snapshot table \"p.staging.snap\": write dataset.table (the project comes from the deployment)"},
		{"bad dataset", "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM `my-ds.snap` KEYS (id) VERSION BY v;", "f.sql:1:53: flow f: snapshot table \"my-ds.snap\": a dataset name is letters"},
		{"bad table", "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM `ds.snap;drop` KEYS (id) VERSION BY v;", "f.sql:1:53: flow f: snapshot table \"ds.snap;drop\": a table name is"},
		{"string source", "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM 'ds.snap' KEYS (id) VERSION BY v;", "f.sql:1:53: flow f: expected the snapshot table (dataset.table)"},
		{"version by on a stream", "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(abc) KEYS (id) SEQUENCE BY s VERSION BY v;", "f.sql:1:75: flow f: VERSION BY orders the snapshots of an AUTO CDC FROM SNAPSHOT flow"},
	})
}

var snapshotTable = schema.Columns{
	{Name: "id", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "city", Type: schema.String},
	{Name: "tags", Type: schema.String, Repeated: true}, {Name: "score", Type: schema.Float64},
	{Name: "loaded_at", Type: schema.Timestamp}, {Name: "run", Type: schema.Int64}, {Name: "amount", Type: schema.Numeric},
}

func TestBindSnapshot(t *testing.T) {
	head := "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM staging.snap KEYS (id) "
	tests := []struct {
		name, clauses   string
		output, tracked []string
		where           string
	}{
		{"the version is not a target column", "VERSION BY loaded_at", []string{"id", "name", "city", "tags", "score", "run", "amount"}, nil, ""},
		{"SCD 2 tracks every value column", "VERSION BY run STORED AS SCD TYPE 2", []string{"id", "name", "city", "tags", "score", "loaded_at", "amount"},
			[]string{"name", "city", "tags", "score", "loaded_at", "amount"}, ""},
		{"columns and track history", "VERSION BY run COLUMNS * EXCEPT (score) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (city, loaded_at)",
			[]string{"id", "name", "city", "tags", "loaded_at", "amount"}, []string{"name", "tags", "amount"}, ""},
		{"a WHERE over the table", "VERSION BY run COLUMNS (id, name) WHERE city <> 'Test'", []string{"id", "name"}, nil, "`city` <> 'Test'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := bindFile(t, "s.sql", head+tt.clauses+";", snapshotTable)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.output, b.Output.Names()); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.tracked, b.Tracked); d != "" {
				t.Errorf("tracked (-want +got):\n%s", d)
			}
			if b.Where != tt.where {
				t.Errorf("where = %q, want %q", b.Where, tt.where)
			}
			if len(b.Sequence) != 1 || b.Sequence[0].Name != b.Version.Name {
				t.Errorf("sequence = %v, want the version column", b.Sequence)
			}
		})
	}
}

func TestBindSnapshotErrors(t *testing.T) {
	head := "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM staging.snap\n"
	tests := []struct {
		name, src, want string
		cols            schema.Columns
	}{
		{"unknown version", head + "KEYS (id) VERSION BY loaded;", "s.sql:2:22: flow f: unknown column loaded in VERSION BY: the snapshot table staging.snap has id, name", nil},
		{"float version", head + "KEYS (id) VERSION BY score;", "s.sql:2:22: flow f: version column score is FLOAT64: a snapshot version is INT64, STRING, DATE, DATETIME or TIMESTAMP", nil},
		{"numeric version", head + "KEYS (id) VERSION BY amount;", "version column amount is NUMERIC", nil},
		{"version in columns", head + "KEYS (id) VERSION BY run COLUMNS (id, run);", "s.sql:2:39: flow f: COLUMNS names the version column run", nil},
		{"float key", head + "KEYS (score) VERSION BY run;", "key column score is FLOAT64", nil},
		{"track a key", head + "KEYS (id) VERSION BY run STORED AS SCD TYPE 2 TRACK HISTORY ON (id);", "TRACK HISTORY ON names key column id", nil},
		{"missing table", head + "KEYS (id) VERSION BY run;", "s.sql:1:53: flow f: snapshot table staging.snap not found", schema.Columns{}},
		{"reserved column", head + "KEYS (id) VERSION BY run;", "the snapshot table staging.snap has column __x: names starting with __ are reserved",
			append(append(schema.Columns{}, snapshotTable...), schema.Column{Name: "__x", Type: schema.String})},
		{"tie-breaker column", head + "KEYS (id) VERSION BY run;", "has column _cdc_message_id, the name bqcdc gives the tie-breaker",
			append(append(schema.Columns{}, snapshotTable...), schema.Column{Name: "_cdc_message_id", Type: schema.String})},
		{"interval clash", head + "KEYS (id) VERSION BY run STORED AS SCD TYPE 2;", "clashes with the SCD type 2 interval column",
			append(append(schema.Columns{}, snapshotTable...), schema.Column{Name: "__START_AT", Type: schema.String})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols := tt.cols
			if cols == nil {
				cols = snapshotTable
			}
			_, err := bindFile(t, "s.sql", tt.src, cols)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant %q", err, tt.want)
			}
		})
	}
}

// A missing table is one error, not one more per column the flow names.
func TestBindSnapshotMissingTableOneError(t *testing.T) {
	_, err := bindFile(t, "s.sql", "CREATE FLOW f AS AUTO CDC FROM SNAPSHOT INTO t FROM staging.snap KEYS (id, region) VERSION BY run COLUMNS (id, name);", schema.Columns{})
	if list, ok := err.(ErrorList); !ok || len(list) != 1 {
		t.Errorf("error = %v, want exactly one (table not found)", err)
	}
}

// A snapshot flow binds to its table's columns, found by its SourceKey.
func TestBindAllSnapshot(t *testing.T) {
	flows, err := Parse("s.sql", "AUTO CDC FROM SNAPSHOT INTO t FROM staging.snap KEYS (id) VERSION BY run;\n"+
		"AUTO CDC INTO u FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;")
	if err != nil {
		t.Fatal(err)
	}
	bound, err := BindAll(flows, map[string]schema.Columns{"table:staging.snap": snapshotTable, "users_topic": usersChangelog})
	if err != nil || len(bound) != 2 {
		t.Fatalf("bound %d, errors %v", len(bound), err)
	}
}
