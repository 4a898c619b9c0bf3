package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sample() Report {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return Report{Project: "p", Dataset: "cdc", At: at,
		Flows: []Flow{
			{Flow: "fresh", Source: "db.a", NewestSourceTS: at.Add(-5 * time.Second), LagSeconds: 5, TailRows: 3,
				LastIngestedAt: at.Add(-2 * time.Second), LastCompactedAt: at.Add(-4 * time.Minute),
				LastRun: &Run{At: at.Add(-4 * time.Minute), Outcome: "compacted", Events: 10, Jobs: 3, BytesBilled: 20 << 20}},
			{Flow: "stale", Source: "db.b", NewestSourceTS: at.Add(-3 * time.Hour), LagSeconds: 3 * 3600, TailRows: 5000,
				LastRun: &Run{At: at.Add(-2 * time.Hour), Outcome: "idle"}},
			{Flow: "broken", Source: "db.b", LagSeconds: -1, LastRun: &Run{At: at.Add(-time.Minute), Outcome: "failed", Error: "Access Denied"}},
			{Flow: "new", Source: "db.c", LagSeconds: -1},
		},
		Sources:     []Source{{Source: "db.a", Table: "db_a_changelog", Rows: 12, Bytes: 2048}, {Source: "db.c", Table: "db_c_changelog", Error: "no changelog table (run bqcdc apply)"}},
		DeadLetters: []DeadLetters{{Topic: "db.a", Stage: "decode", Reason: "truncated", Count: 2}, {Topic: "", Stage: "event", Reason: "bad body", Count: 1}},
	}
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		name string
		th   Thresholds
		want []string
	}{
		{"off: failures only", Off, []string{
			"broken: compaction: last run failed: Access Denied",
			"db.c: changelog: no changelog table (run bqcdc apply)",
		}},
		{"every check", Thresholds{MaxLag: time.Minute, MaxTail: 1000, MaxCompactionAge: 30 * time.Minute, MaxDeadLetters: 1}, []string{
			"stale: lag: newest change 3h00m old, more than 1m0s",
			"stale: tail: 5000 rows wait after the watermark, more than 1000",
			"stale: compaction: last run 2h00m ago, more than 30m0s",
			"broken: lag: no change ingested in the window",
			"broken: compaction: last run failed: Access Denied",
			"new: lag: no change ingested in the window",
			"new: compaction: no run in the window",
			"db.a: dead_letters: 2 in the last day, more than 1",
			"db.c: changelog: no changelog table (run bqcdc apply)",
		}},
		{"any dead letter", Thresholds{MaxTail: -1, MaxDeadLetters: 0}, []string{
			"broken: compaction: last run failed: Access Denied",
			"db.a: dead_letters: 2 in the last day, more than 0",
			"(no topic): dead_letters: 1 in the last day, more than 0",
			"db.c: changelog: no changelog table (run bqcdc apply)",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			got := problems(&r, tt.th)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
			if len(r.Problems) != len(got) {
				t.Error("Check did not store the problems in the report")
			}
		})
	}
}

func TestWrite(t *testing.T) {
	r := sample()
	Check(&r, Off)
	checkWrite(t, r,
		"bqcdc status of p.cdc at 2026-05-01 12:00:00Z",
		"fresh   db.a    2026-05-01 11:59:55  5s     2s ago    3     compacted 4m00s ago  10      3     20.0 MiB  4m00s ago  0",
		"new     db.c    -                    -      -         0     none",
		"db.a    db_a_changelog  12    2.0 KiB",
		"db.c    db_c_changelog  no changelog table",
		"  (no topic)  event   1      bad body",
		"2 problem(s):",
	)
}

// A change feed held by compaction (turned off, then on again) is a problem
// under every threshold, and the flow's line says so: its readers see no
// new changes until an operator acts.
func TestHeldChangeFeed(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	held := "the change feed was off (TBLPROPERTIES) and is on again: drop `p.cdc.t__changes` and run bqcdc apply to rebuild it from the changelog"
	r := Report{Project: "p", Dataset: "cdc", At: at, Flows: []Flow{{Flow: "t", Source: "db.a", NewestSourceTS: at.Add(-5 * time.Second), LagSeconds: 5,
		LastRun: &Run{At: at.Add(-time.Minute), Outcome: "compacted", Events: 4, Jobs: 2, FeedHeld: held}}}}
	if d := cmp.Diff([]string{"t: change_feed: held: " + held}, problems(&r, Off)); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	checkWrite(t, r, "compacted 1m00s ago (change feed held)", "1 problem(s):", "t: change_feed: held: the change feed was off")
}

// A last run that touched keys outside its state's key range is a problem
// under every threshold, naming the fix.
func TestKeysOutsideRange(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	r := Report{Project: "p", Dataset: "cdc", At: at, Flows: []Flow{{Flow: "t", Source: "db.a", NewestSourceTS: at.Add(-5 * time.Second), LagSeconds: 5,
		LastRun: &Run{At: at.Add(-time.Minute), Outcome: "compacted", Events: 4, Jobs: 3, KeysOutsideRange: true}}}}
	want := "t: key_range: the last run touched keys outside the state's key range (bqcdc.state.key_range): widen it and run bqcdc apply"
	if d := cmp.Diff([]string{want}, problems(&r, Off)); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	r.Flows[0].LastRun.KeysOutsideRange = false
	if got := problems(&r, Off); len(got) != 0 {
		t.Errorf("keys inside the range: problems %v", got)
	}
}

// problems runs Check on r and returns the problems it found as text.
func problems(r *Report, th Thresholds) []string {
	var got []string
	for _, p := range Check(r, th) {
		got = append(got, p.String())
	}
	return got
}

// checkWrite writes r and checks that the output holds each line of want.
func checkWrite(t *testing.T, r Report, want ...string) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// A snapshot flow has no changelog: no lag or tail problem however old its
// data, a failed run still is one, and its line shows the version applied
// and the rows skipped instead of a tail and dead letters.
func TestSnapshotFlow(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	r := Report{Project: "p", Dataset: "cdc", At: at, Flows: []Flow{
		{Flow: "extracts", Source: "staging.customers", Kind: "snapshot", LagSeconds: -1, LastCompactedAt: at.Add(-time.Hour),
			LastRun: &Run{At: at.Add(-10 * time.Minute), Outcome: "up to date", Jobs: 2, AppliedVersion: "TIMESTAMP '2026-05-01 00:00:00+00:00'", RowsSkipped: 2}},
		{Flow: "extracts_failing", Source: "staging.orders", Kind: "snapshot", LagSeconds: -1,
			LastRun: &Run{At: at.Add(-10 * time.Minute), Outcome: "failed", Error: "Access Denied"}},
	}}
	got := problems(&r, Thresholds{MaxLag: time.Minute, MaxTail: 0, MaxCompactionAge: 30 * time.Minute})
	if d := cmp.Diff([]string{"extracts_failing: compaction: last run failed: Access Denied"}, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	checkWrite(t, r, "extracts          staging.customers  -              -    -         -     up to date 10m00s ago (at TIMESTAMP '2026-05-01 00:00:00+00:00', 2 rows skipped)  0       2     0 B     1h00m ago  -")
}

func TestAgeAndBytes(t *testing.T) {
	for d, want := range map[time.Duration]string{45 * time.Second: "45s", 12*time.Minute + 3*time.Second: "12m03s", 3*time.Hour + 5*time.Minute: "3h05m", 52 * time.Hour: "2d04h"} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 10 << 30: "10.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// Materialized views are listed with what they read and how far their
// refreshed table is.
func TestWriteGolds(t *testing.T) {
	r := sample()
	r.Golds = []Gold{
		{View: "orders_per_day", Source: "orders", Refreshed: true, RefreshedTo: r.At.Add(-3 * time.Minute)},
		{View: "sessions", Source: "orders"},
		{View: "events", Source: "STREAM(db.a)", Refreshed: true},
	}
	checkWrite(t, r,
		"MATERIALIZED VIEW  READS         EXACT NOW  REFRESHED (<view>_refreshed)",
		"orders_per_day     orders        yes        to 2026-05-01 11:57:00 (3m00s ago)",
		"sessions           orders        yes        no (not kept by compaction)",
		"events             STREAM(db.a)  yes        not yet refreshed by compaction",
	)
}
