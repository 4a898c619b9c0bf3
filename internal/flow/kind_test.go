package flow

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
)

// Every kind of flow parses to its Kind, and the kind says which objects
// it gets beside its view.
func TestKind(t *testing.T) {
	for _, tt := range []struct {
		src               string
		want              Kind
		snapshot, history bool
		changeFeed        bool
		routines          []string
	}{
		{"AUTO CDC INTO t FROM STREAM(topic) KEYS (id) SEQUENCE BY s;", SCD1, false, false, true, []string{"_at", "_changes"}},
		{"AUTO CDC INTO t FROM STREAM(topic) KEYS (id) SEQUENCE BY s STORED AS SCD TYPE 2;", SCD2, false, true, true, []string{"_at", "_changes"}},
		{"AUTO CDC INTO t FROM STREAM(topic) KEYS (id) SEQUENCE BY s SYSTEM SEQUENCE BY i STORED AS BITEMPORAL;", Bitemporal, false, true, false, []string{"_as_of"}},
		{"AUTO CDC FROM SNAPSHOT INTO t FROM staging.c KEYS (id) VERSION BY v;", SnapshotSCD1, true, false, false, nil},
		{"AUTO CDC FROM SNAPSHOT INTO t FROM staging.c KEYS (id) VERSION BY v STORED AS SCD TYPE 2;", SnapshotSCD2, true, true, false, nil},
	} {
		flows, err := Parse("k.sql", tt.src)
		if err != nil {
			t.Fatal(err)
		}
		k := flows[0].Kind()
		if k != tt.want || k.Snapshot() != tt.snapshot || k.History() != tt.history || k.ChangeFeed() != tt.changeFeed || !slices.Equal(k.Routines(), tt.routines) {
			t.Errorf("%s: kind %s (snapshot %v, history %v, change feed %v, routines %v), want %s (%v, %v, %v, %v)",
				tt.src, k, k.Snapshot(), k.History(), k.ChangeFeed(), k.Routines(), tt.want, tt.snapshot, tt.history, tt.changeFeed, tt.routines)
		}
		if k.String() == "invalid" {
			t.Errorf("%s: kind %d has no name", tt.src, k)
		}
	}
	if Kind(0).String() != "invalid" {
		t.Error("the zero Kind has a name")
	}
}

// TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false') on a target's
// declaration, in the same file, in another, or in Databricks SQL's
// CREATE STREAMING TABLE ... FLOW AUTO CDC, turns the flow's change feed
// off: no <target>_changes. Any other value is refused where it stands.
func TestChangeDataFeedProperty(t *testing.T) {
	const flowA = "CREATE FLOW a AS AUTO CDC INTO ta FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;\n"
	const flowB = "CREATE FLOW b AS AUTO CDC INTO tb FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum STORED AS SCD TYPE 2;\n"
	names := []string{"decl.sql", "flows.sql"}
	srcs := map[string]string{
		"decl.sql": "CREATE OR REFRESH STREAMING TABLE tb TBLPROPERTIES (quality = 'gold', delta.enableChangeDataFeed = false);\n" +
			"CREATE OR REFRESH STREAMING TABLE tc TBLPROPERTIES ('delta.enableChangeDataFeed' = 'false') FLOW AUTO CDC FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;\n",
		"flows.sql": "CREATE STREAMING TABLE ta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true');\n" + flowA + flowB,
	}
	flows, errs := ParseFiles(names, srcs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string][]string{"a": {catalog.AtSuffix, catalog.ChangesSuffix}, "b": {catalog.AtSuffix}, "tc": {catalog.AtSuffix}}
	for _, f := range flows {
		if got := f.Routines(); !slices.Equal(got, want[f.Name]) {
			t.Errorf("flow %s: routines %v, want %v", f.Name, got, want[f.Name])
		}
		if f.ChangeFeed() != (f.Name == "a") {
			t.Errorf("flow %s: ChangeFeed() = %v", f.Name, f.ChangeFeed())
		}
	}
	if len(flows) != 3 {
		t.Errorf("%d flows, want 3", len(flows))
	}
	_, err := Parse("p.sql", "CREATE STREAMING TABLE t TBLPROPERTIES ('delta.enableChangeDataFeed' = 'no');")
	if err == nil || !strings.Contains(err.Error(), "p.sql:1:72: delta.enableChangeDataFeed is 'true' or 'false'") {
		t.Errorf("a value that is no boolean: %v", err)
	}
}

// TBLPROPERTIES ('bqcdc.state.buckets' = 'N') gives a change-stream flow a
// state of N buckets, in a declaration or in Databricks SQL's form; a
// number out of 2..MaxStateBuckets, or a snapshot flow's, is refused where
// it stands.
func TestStateBucketsProperty(t *testing.T) {
	names := []string{"decl.sql", "flows.sql"}
	srcs := map[string]string{
		"decl.sql": "CREATE STREAMING TABLE ta TBLPROPERTIES ('bqcdc.state.buckets' = '64');\n" +
			"CREATE OR REFRESH STREAMING TABLE tc TBLPROPERTIES (bqcdc.state.buckets = 9998) FLOW AUTO CDC FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum STORED AS SCD TYPE 2;\n",
		"flows.sql": "CREATE FLOW a AS AUTO CDC INTO ta FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;\n" +
			"CREATE FLOW b AS AUTO CDC INTO tb FROM STREAM(users_topic) KEYS (userId) SEQUENCE BY sequenceNum;\n",
	}
	flows, errs := ParseFiles(names, srcs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string]int{"a": 64, "b": 0, "tc": 9998}
	for _, f := range flows {
		if f.StateBuckets != want[f.Name] {
			t.Errorf("flow %s: %d buckets, want %d", f.Name, f.StateBuckets, want[f.Name])
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.buckets' = '9999');", "p.sql:1:65: bqcdc.state.buckets is a whole number of buckets from 2 to 9998"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.buckets' = 'many');", "p.sql:1:65: bqcdc.state.buckets is a whole number"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.buckets' = 1);", "p.sql:1:65: bqcdc.state.buckets is a whole number"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.buckets' = '8');\nAPPLY CHANGES FROM SNAPSHOT INTO t FROM staging.x KEYS (id) VERSION BY v;",
			"p.sql:1:65: flow t: bqcdc.state.buckets: a snapshot flow's state is not partitioned by buckets"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.buckets' = '8', 'delta.enableChangeDataFeed' = 'false');\nCREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;",
			"p.sql:1:65: flow t: bqcdc.state.buckets: flow t keeps no change feed"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.buckets' = '8');\nCREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v SYSTEM SEQUENCE BY w STORED AS BITEMPORAL;",
			"p.sql:1:65: flow t: bqcdc.state.buckets: flow t keeps no change feed"},
	} {
		_, err := Parse("p.sql", tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.src, err, tt.want)
		}
	}
}

// TBLPROPERTIES ('bqcdc.history' = 'true') keeps an SCD 1 flow's every
// event for its <target>_at; it is refused, at the property, on a flow of
// another kind and on a state of buckets.
func TestHistoryProperty(t *testing.T) {
	flows, err := Parse("h.sql", "CREATE STREAMING TABLE a TBLPROPERTIES ('bqcdc.history' = 'true');\n"+
		"CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;\n"+
		"CREATE OR REFRESH STREAMING TABLE b TBLPROPERTIES (bqcdc.history = false) FLOW AUTO CDC FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range flows {
		if want := f.Name == "a"; f.History != want {
			t.Errorf("flow %s: history %v, want %v", f.Name, f.History, want)
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.history' = 'yes');", "p.sql:1:59: bqcdc.history is 'true' or 'false'"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.history' = 'true');\nCREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v STORED AS SCD TYPE 2;",
			"p.sql:1:59: flow t: bqcdc.history: flow t is not an SCD 1 flow of a change stream"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.history' = 'true');\nAPPLY CHANGES FROM SNAPSHOT INTO t FROM staging.x KEYS (id) VERSION BY v;",
			"p.sql:1:59: flow t: bqcdc.history: flow t is not an SCD 1 flow of a change stream"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.history' = 'true', 'bqcdc.state.buckets' = '8');\nCREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;",
			"p.sql:1:59: flow t: bqcdc.history: a state of buckets"},
	} {
		_, err := Parse("p.sql", tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.src, err, tt.want)
		}
	}
}

// TBLPROPERTIES ('bqcdc.state.key_range' = 'START:END') partitions a
// change-stream flow's state by ranges of its first key, in a declaration
// or in Databricks SQL's form (which also carries the other properties:
// the history); a range that is not START < END, a snapshot flow's, or one
// beside buckets or a history is refused where it stands.
func TestStateKeyRangeProperty(t *testing.T) {
	flows, err := Parse("r.sql", "CREATE STREAMING TABLE a TBLPROPERTIES ('bqcdc.state.key_range' = '-5:20000000');\n"+
		"CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v SYSTEM SEQUENCE BY w STORED AS BITEMPORAL;\n"+
		"CREATE OR REFRESH STREAMING TABLE b TBLPROPERTIES (bqcdc.state.key_range = '0:10') FLOW AUTO CDC FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v STORED AS SCD TYPE 2;\n"+
		"CREATE OR REFRESH STREAMING TABLE c TBLPROPERTIES ('bqcdc.history' = 'true') FLOW AUTO CDC FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;\n")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Flow{}
	for _, f := range flows {
		got[f.Name] = f
	}
	if r := got["a"].StateKeyRange; r == nil || r.Start != -5 || r.End != 20000000 || r.Interval() != 2001 || r.Partitions() != 9996 {
		t.Errorf("flow a: key range %+v", r)
	} else if p, ok := r.Partition(-5); !ok || p != 0 {
		t.Errorf("key -5 in range %d, %v", p, ok)
	} else if p, ok := r.Partition(19999999); !ok || p != 9995 {
		t.Errorf("key 19999999 in range %d, %v", p, ok)
	} else if _, ok := r.Partition(20000000); ok {
		t.Error("key 20000000 (END) in a range")
	}
	if r := got["b"].StateKeyRange; r == nil || r.Interval() != 1 || r.Partitions() != 10 {
		t.Errorf("flow b: key range %+v", r)
	}
	if !got["c"].History || got["c"].StateKeyRange != nil {
		t.Errorf("flow c (Databricks SQL's form): history %v, key range %v", got["c"].History, got["c"].StateKeyRange)
	}
	if r := (&KeyRange{Start: -1 << 62, End: 1<<62 - 1}); r.Partitions() > MaxKeyRangePartitions || r.Interval() <= 0 {
		t.Errorf("half the INT64 range: %d ranges of %d", r.Partitions(), r.Interval())
	}
	for _, tt := range []struct{ src, want string }{
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.key_range' = '10:10');", "p.sql:1:67: bqcdc.state.key_range is START:END"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.key_range' = '1000');", "p.sql:1:67: bqcdc.state.key_range is START:END"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.key_range' = '0:99999999999999999999');", "p.sql:1:67: bqcdc.state.key_range is START:END"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.key_range' = '-1:9223372036854775807');", "p.sql:1:67: bqcdc.state.key_range is START:END"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.key_range' = '0:8');\nAPPLY CHANGES FROM SNAPSHOT INTO t FROM staging.x KEYS (id) VERSION BY v;",
			"p.sql:1:67: flow t: bqcdc.state.key_range: a snapshot flow's state is not partitioned by key range"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.state.key_range' = '0:8', 'bqcdc.state.buckets' = '8');\nCREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;",
			"p.sql:1:67: flow t: bqcdc.state.key_range: the state is partitioned by buckets"},
		{"CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.history' = 'true', 'bqcdc.state.key_range' = '0:8');\nCREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;",
			"p.sql:1:93: flow t: bqcdc.state.key_range: an SCD 1 history"},
	} {
		_, err := Parse("p.sql", tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.src, err, tt.want)
		}
	}
}

// TestLatenessHorizonProperty: bqcdc.lateness_horizon_days is read in both
// declaration forms and refused, at its value, where events cannot be
// dropped (not SCD 2, IGNORE NULL UPDATES) or it is no number of days.
func TestLatenessHorizonProperty(t *testing.T) {
	flows, err := Parse("h.sql", "CREATE STREAMING TABLE a TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '30');\n"+
		"CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v STORED AS SCD TYPE 2 TRACK HISTORY ON (n);\n"+
		"CREATE OR REFRESH STREAMING TABLE b TBLPROPERTIES (bqcdc.lateness_horizon_days = 7, 'bqcdc.state.key_range' = '0:10') FLOW AUTO CDC FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v STORED AS SCD TYPE 2;\n"+
		"CREATE FLOW c AS AUTO CDC INTO c FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v STORED AS SCD TYPE 2;\n"+
		"CREATE STREAMING TABLE d TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '3');\n"+
		"CREATE FLOW d AS AUTO CDC INTO d FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v SYSTEM SEQUENCE BY w STORED AS BITEMPORAL;\n")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Flow{}
	for _, f := range flows {
		got[f.Name] = f
	}
	if got["a"].LatenessHorizonDays != 30 || got["b"].LatenessHorizonDays != 7 || got["b"].StateKeyRange == nil || got["c"].LatenessHorizonDays != 0 || got["d"].LatenessHorizonDays != 3 {
		t.Errorf("horizons a %d, b %d (key range %v), c %d, d (bitemporal) %d", got["a"].LatenessHorizonDays, got["b"].LatenessHorizonDays, got["b"].StateKeyRange, got["c"].LatenessHorizonDays, got["d"].LatenessHorizonDays)
	}
	const decl = "CREATE STREAMING TABLE t TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '%s');\n"
	for _, tt := range []struct{ days, flow, want string }{
		{"0", "", "p.sql:1:73: bqcdc.lateness_horizon_days is a whole number of days from 1 to 3650"},
		{"3651", "", "p.sql:1:73: bqcdc.lateness_horizon_days is a whole number of days"},
		{"1.5", "", "p.sql:1:73: bqcdc.lateness_horizon_days is a whole number of days"},
		{"30", "CREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v;", "p.sql:1:73: flow t: bqcdc.lateness_horizon_days: flow t is not an SCD 2 or bitemporal flow"},
		{"30", "APPLY CHANGES FROM SNAPSHOT INTO t FROM staging.x KEYS (id) VERSION BY v STORED AS SCD TYPE 2;", "flow t is not an SCD 2 or bitemporal flow of a change stream"},
		{"30", "CREATE FLOW t AS AUTO CDC INTO t FROM STREAM(users_topic) KEYS (id) SEQUENCE BY v STORED AS SCD TYPE 2 IGNORE NULL UPDATES;", "p.sql:1:73: flow t: bqcdc.lateness_horizon_days: flow t has IGNORE NULL UPDATES"},
	} {
		src := fmt.Sprintf(decl, tt.days) + tt.flow
		_, err := Parse("p.sql", src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", src, err, tt.want)
		}
	}
}

// TestKeyRangeWidened: a range widened to hold keys outside it gets room
// to grow on the side they passed, within INT64 and the property's span.
func TestKeyRangeWidened(t *testing.T) {
	for _, tt := range []struct {
		r      KeyRange
		lo, hi int64
		want   KeyRange
		ok     bool
	}{
		{KeyRange{Start: 1, End: 4}, 0, 5, KeyRange{Start: -4, End: 11}, true},
		{KeyRange{Start: 0, End: 1000}, 3, 1500, KeyRange{Start: 0, End: 3002}, true},
		{KeyRange{Start: 0, End: 10}, 5, 9, KeyRange{Start: 0, End: 10}, true},
		{KeyRange{Start: 0, End: 1 << 62}, 0, 1<<62 + 10, KeyRange{Start: 0, End: math.MaxInt64}, true},
		{KeyRange{Start: 1 << 62, End: 1<<62 + 10}, -(1 << 62), 1 << 62, KeyRange{}, false}, // the keys span past 2^63 - 1
		{KeyRange{Start: 1 << 61, End: 1<<61 + 10}, -(1 << 61), 1 << 61, KeyRange{}, true},  // room cut to the span: checked below only
		{KeyRange{Start: 0, End: math.MaxInt64}, 0, math.MaxInt64, KeyRange{}, false},
		{KeyRange{Start: -(1 << 62), End: 1 << 62}, 0, 1<<62 + 5, KeyRange{}, false},
	} {
		got, ok := tt.r.Widened(tt.lo, tt.hi)
		if ok != tt.ok || got != tt.want && tt.want != (KeyRange{}) {
			t.Errorf("%d:%d widened to %d..%d: %d:%d %v, want %d:%d %v", tt.r.Start, tt.r.End, tt.lo, tt.hi, got.Start, got.End, ok, tt.want.Start, tt.want.End, tt.ok)
			continue
		}
		if ok {
			if _, valid := parseKeyRange(fmt.Sprintf("%d:%d", got.Start, got.End)); !valid || got.Start > tt.lo || got.End <= tt.hi || got.Start > tt.r.Start || got.End < tt.r.End {
				t.Errorf("%d:%d widened to %d..%d: %d:%d is no valid range holding them", tt.r.Start, tt.r.End, tt.lo, tt.hi, got.Start, got.End)
			}
		}
	}
}
