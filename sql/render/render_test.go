package render

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func boundTestFlows(t *testing.T) []*flow.Bound { return rendercases.Flows(t, "testdata") }

var loc = catalog.Location{Project: "my-project", DefaultDataset: "cdc"}

// renderAll renders everything bqcdc runs for a flow: the view, then the
// compaction statements in order.
func renderAll(t *testing.T, b *flow.Bound) string {
	t.Helper()
	if b.IsSnapshot() {
		return renderSnapshot(t, b)
	}
	view, err := testView(b, loc, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	run := Run{
		Watermark: time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), FoldedMax: time.Date(2026, 11, 30, 7, 9, 0, 123456000, time.UTC),
		Generation: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), NewWatermark: time.Date(2026, 11, 30, 7, 50, 0, 0, time.UTC),
		TombstoneCutoff: time.Date(2026, 10, 31, 8, 0, 0, 0, time.UTC), Cutoff: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC),
		ChangesFrom: time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)}
	c := NewCompaction(b, loc, testShape(b))
	parts := []string{view}
	steps := []func() (string, error){
		c.Marker, func() (string, error) { return c.Stats(run) }, func() (string, error) { return c.Fold(run) },
		func() (string, error) { return c.Maintain(run) }, func() (string, error) { return c.MaintainGC(run) },
		func() (string, error) { return c.ExpireChangelog(run.Watermark) }, c.FirstPosition,
	}
	if b.Kind().ChangeFeed() {
		keyed := run
		keyed.Keys = testKeyFilter(b)
		steps = append(steps, func() (string, error) { return c.Changes(keyed) })
	}
	if Archives(b) {
		// A state with an archive: maintenance writes one, the run asks
		// which keys are late, and its change feed reads the levels, and
		// the archive of the late keys.
		archived, late := run, run
		archived.Archive = ArchiveSlot(run.Generation, nil)
		late.Keys = testKeyFilter(b)
		late.Archived = &ArchiveRead{Late: &KeyFilter{Lo: late.Keys.Lo[:1], Hi: late.Keys.Lo[:1]}}
		if b.StateBuckets > 0 {
			late.Archived.Late.Buckets = []int64{17} // its archive partition: 17 + the buckets
		}
		steps = append(steps, c.ArchiveSlots, func() (string, error) { return c.Maintain(archived) }, func() (string, error) { return c.MaintainGC(archived) },
			func() (string, error) { return c.Late(late) }, func() (string, error) { return c.Changes(late) })
	}
	if b.StateBuckets > 0 {
		// A run split by bucket ranges: a first range (no marker), then the
		// last (the marker, the NULL partition's DELETE).
		first, last := run, run
		first.Chunk, last.Chunk = &BucketChunk{Lo: 0, Hi: 1999}, &BucketChunk{Lo: 2000, Hi: int64(b.StateBuckets - 1), Last: true}
		for _, r := range []Run{first, last} {
			steps = append(steps, func() (string, error) { return c.Fold(r) }, func() (string, error) { return c.Maintain(r) },
				func() (string, error) { return c.MaintainGC(r) })
		}
	}
	for _, step := range steps {
		sql, err := step()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, sql)
	}
	fns := []func(*flow.Bound, catalog.Location, Shape) (string, error){
		func(b *flow.Bound, loc catalog.Location, s Shape) (string, error) {
			return AtFunction(b, loc, s, run.Watermark)
		},
		ChangesFunction,
	}
	if b.Bitemporal {
		fns = fns[:0]
		fns = append(fns, func(b *flow.Bound, loc catalog.Location, _ Shape) (string, error) { return AsOfFunction(b, loc) })
	}
	for _, fn := range fns {
		sql, err := fn(b, loc, testShape(b))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, sql)
	}
	return strings.Join(parts, ";\n\n") + ";\n"
}

// testKeyFilter is a run's key filter on b's first key column: one value,
// and a range, of the column's type.
func testKeyFilter(b *flow.Bound) *KeyFilter {
	switch b.Keys[0].Type {
	case schema.Int64:
		return &KeyFilter{Lo: []any{int64(7), int64(10)}, Hi: []any{int64(7), int64(20)}, Buckets: []int64{3998, 0, 17}}
	case schema.String:
		return &KeyFilter{Lo: []any{"a'b", "m"}, Hi: []any{"a'b", "q"}, Null: true}
	}
	return nil
}

// checkGolden compares got with testdata/golden/name, which -update
// rewrites first.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sql/render -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("SQL differs from %s (-want +got; go test ./sql/render -update rewrites it):\n%s", path, d)
	}
}

var emptyItem = regexp.MustCompile(`,\s*,|\(\s*,|,\s*\)`)

func TestSQLGolden(t *testing.T) {
	for _, b := range boundTestFlows(t) {
		t.Run(b.Name, func(t *testing.T) {
			got := renderAll(t, b)
			if again := renderAll(t, b); again != got {
				t.Fatal("rendering twice gave different SQL")
			}
			checkGolden(t, b.Name+".sql", got)
			// An empty list spliced between two others leaves ", ,": a
			// syntax error BigQuery reports only when the SQL runs.
			if m := emptyItem.FindStringIndex(got); m != nil {
				line := strings.Count(got[:m[0]], "\n") + 1
				t.Errorf("line %d has an empty list item: %q", line, got[m[0]:m[1]])
			}
		})
	}
}

// Every identifier the SQL mentions is quoted: scanning the SQL with string
// literals and comments removed, a bare word must be a SQL keyword, a
// function, or one of bqcdc's internal __ names.
func TestViewQuotesEveryIdentifier(t *testing.T) {
	allowed := map[string]bool{}
	for _, w := range strings.Fields(`WITH AS SELECT FROM WHERE AND OR NOT IS NULL IN TRUE QUALIFY OVER PARTITION BY ORDER
		ROWS BETWEEN UNBOUNDED PRECEDING CURRENT ROW UNION ALL CASE WHEN THEN ELSE END DESC ASC LIMIT GROUP HAVING MIN MAX
		CROSS JOIN DISTINCT IGNORE NULLS WINDOW TIMESTAMP DATE IFNULL ANY_VALUE ARRAY_AGG STRUCT SAFE_OFFSET ROW_NUMBER COUNTIF
		COUNT IF FIRST_VALUE LAG LEAD TO_JSON_STRING e lt w folded_until watermark tail state events last_truncate truncate_events ranked
		segmented current_state numbered filled_counts filled flagged versioned versions INSERT INTO DELETE EXISTS
		LOGICAL_OR CAST STRING FALSE marked touched TIMESTAMP INT64 BOOL DATE JSON ARRAY NUMERIC STRUCT
		newest_gen folded_max events without_sequence unfolded newest keys truncates state_generations arrivals EXCEPT UNIX_MICROS TIMESTAMP_MICROS
		CREATE REPLACE TABLE FUNCTION ts from_position to_position args history deduped touched positions snapshots steps
		target_rows sides compared folded keyed ordinals known islands beliefs business_time system_time v a b o LEFT ON JOIN LEAST p k t s r c
		applied current_rows loaded loads present gone closed processed next_version n l LAG UNIX_DATE DATE_FROM_UNIX_DATE DATETIME
		applied_version total_rows newest_version older_version processed_rows newer
		delta flow_delta key_tiles key_lo key_hi key_nulls materialized ranged newest changes_until NTILE BETWEEN levels kept ordered ordered_flagged in_order_flagged in_order_versioned in_order_events in_order_rows in_order_islands in_order_beliefs CONCAT LEAST first_position UNNEST newest_source_ts tail_rows late_flagged late late_s late_suffix late_next marks mapped wm ranges frozen_merge h prefill_seg prefill_counts prefilled in_order_filled f FOLLOWING GENERATE_ARRAY ARRAY_CONCAT DENSE_RANK OFFSET events_known ABS MOD FARM_FINGERPRINT buckets
		levels_stored state_stored history_stored history_state version_candidates version_grouped version_groups sparse_bases sparsed g TIMESTAMP_SUB
		archive_opens archive_split archive level_rows firsts late_tiles archive_watermark archive_current late_keys late_lo late_hi late_nulls slots late_buckets
		history_kept ERROR CURRENT_TIMESTAMP TIMESTAMP_ADD INTERVAL DAY DATE_DIFF MONTH GREATEST`) {
		allowed[strings.ToUpper(w)] = true
	}
	strip := regexp.MustCompile("(?s)--[^\n]*|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`|@[A-Za-z_]+")
	word := regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9_]*\b`)
	for _, b := range boundTestFlows(t) {
		sql := renderAll(t, b)
		for _, w := range word.FindAllString(strip.ReplaceAllString(sql, " "), -1) {
			if !allowed[strings.ToUpper(w)] && !strings.HasPrefix(w, "__") {
				t.Errorf("%s: bare identifier %q in the SQL", b.Name, w)
			}
		}
	}
}

// renderSnapshot renders everything bqcdc runs for a snapshot flow: the
// view, then the compaction statements in order (a run after a version
// was applied: its bound is that version).
func renderSnapshot(t *testing.T, b *flow.Bound) string {
	t.Helper()
	key, upTo := "1764489600000000", "1764576000000000" // 2025-11-30 and 2025-12-01 08:00:00 UTC as microseconds
	if b.Sequence[0].Type == schema.Date {
		key, upTo = "20422", "20423" // 2025-11-30, 2025-12-01
	}
	bound, err := VersionBound(b, key)
	if err != nil {
		t.Fatal(err)
	}
	view, err := SnapshotView(b, loc, testShape(b), "")
	if err != nil {
		t.Fatal(err)
	}
	c := NewSnapshotCompaction(b, loc, testShape(b))
	gen := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	parts := []string{view}
	for _, step := range []func() (string, error){
		c.Marker, func() (string, error) { return c.Stats(bound) }, func() (string, error) { return c.Fold(bound, upTo, gen) },
		func() (string, error) { return c.GC(gen) }, func() (string, error) { return SnapshotView(b, loc, testShape(b), bound) },
	} {
		sql, err := step()
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, sql)
	}
	return strings.Join(parts, ";\n\n") + ";\n"
}

// A fold's upper bound is a version key literal: an integer, or a STRING
// version quoted; anything else is refused rather than spliced.
func TestFoldUpperBound(t *testing.T) {
	gen := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		typ, key, want string
	}{
		{schema.Int64, "-42", "<= -42"},
		{schema.String, "run 'x'", `<= 'run \'x\''`},
		{schema.Timestamp, "1764489600000001", "UNIX_MICROS(`v`) <= 1764489600000001"},
	} {
		b := bindSnapshotFlow(t, tt.typ)
		sql, err := NewSnapshotCompaction(b, loc, testShape(b)).Fold("", tt.key, gen)
		if err != nil {
			t.Fatalf("%s %q: %v", tt.typ, tt.key, err)
		}
		if !strings.Contains(sql, tt.want) {
			t.Errorf("%s %q: fold lacks %q", tt.typ, tt.key, tt.want)
		}
	}
	if _, err := NewSnapshotCompaction(bindSnapshotFlow(t, schema.Int64), loc, Current).Fold("", "1; DROP TABLE x", gen); err == nil {
		t.Error("a non-integer version key was accepted")
	}
}

// bindSnapshotFlow binds a small snapshot flow versioned by v of type typ.
func bindSnapshotFlow(t *testing.T, typ string) *flow.Bound {
	t.Helper()
	flows, err := flow.Parse("s.sql", "AUTO CDC FROM SNAPSHOT INTO t FROM s.t KEYS (k) VERSION BY v;")
	if err != nil {
		t.Fatal(err)
	}
	b, err := flow.Bind(flows[0], schema.Columns{{Name: "k", Type: schema.Int64}, {Name: "a", Type: schema.String}, {Name: "v", Type: typ}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVersionBound(t *testing.T) {
	for _, tt := range []struct {
		typ, key, want string
	}{
		{schema.Int64, "-42", "-42"},
		{schema.String, "run 'x'", `'run \'x\''`},
		{schema.Date, "20422", "DATE '2025-11-30'"},
		{schema.Timestamp, "1764489600000001", "TIMESTAMP '2025-11-30 08:00:00.000001+00:00'"},
		{schema.Datetime, "1764489600500000", "DATETIME '2025-11-30 08:00:00.5'"},
	} {
		b := &flow.Bound{Flow: &flow.Flow{Name: "f"}, Sequence: schema.Columns{{Name: "v", Type: tt.typ}}}
		got, err := VersionBound(b, tt.key)
		if err != nil || got != tt.want {
			t.Errorf("VersionBound(%s, %q) = %s, %v; want %s", tt.typ, tt.key, got, err, tt.want)
		}
	}
	b := &flow.Bound{Flow: &flow.Flow{Name: "f"}, Sequence: schema.Columns{{Name: "v", Type: schema.Int64}}}
	if _, err := VersionBound(b, "1; DROP TABLE x"); err == nil {
		t.Error("a version key that is not an integer was rendered")
	}
}

// A flow file's name with a line break (or another control character) must
// not end the header comment and put SQL of its own in the statement.
func TestFileNameStaysInTheComment(t *testing.T) {
	const file = "x\nDROP TABLE `p.d.t`;\r\x00DROP TABLE `p.d.u`;\u2028DROP TABLE `p.d.v`;\u0085\xff.sql"
	flows := append(boundTestFlows(t), bindSnapshotFlow(t, schema.Int64))
	for _, b := range flows {
		b.Pos.File = file
		var sql string
		if b.IsSnapshot() {
			sql = renderSnapshot(t, b)
		} else {
			sql = renderAll(t, b)
		}
		for _, line := range strings.FieldsFunc(sql, func(r rune) bool { return r == '\n' || r == '\r' || r == '\u2028' || r == 0x85 }) {
			if strings.Contains(line, "DROP TABLE") && !strings.HasPrefix(strings.TrimSpace(line), "--") {
				t.Errorf("%s: the file name left the comment: %q", b.Name, line)
			}
		}
		if !strings.Contains(sql, `from x\x0aDROP TABLE`+" `p.d.t`;"+`\x0d\x00DROP TABLE`) || !strings.Contains(sql, `\u2028`) || !strings.Contains(sql, `\u0085\xff.sql`) {
			t.Errorf("%s: the file name is not escaped in the header: %s", b.Name, sql[:min(len(sql), 300)])
		}
	}
	if got := commentText("flows/orders.sql"); got != "flows/orders.sql" {
		t.Errorf("a plain name changed: %q", got)
	}
}

// The test flows' materialized views, against golden copies.
func TestGoldGolden(t *testing.T) {
	d, errs := flow.ParseDirAll("testdata")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	bound := boundTestFlows(t)
	if len(d.Golds) == 0 {
		t.Fatal("no materialized views in testdata/flows.sql")
	}
	for _, g := range d.Golds {
		t.Run(g.Name.Table, func(t *testing.T) {
			bg, err := flow.BindGold(g, bound, loc.DefaultDataset)
			if err != nil {
				t.Fatal(err)
			}
			got, err := GoldView(bg, loc)
			if err != nil {
				t.Fatal(err)
			}
			got += ";\n"
			if bg.Refreshable() == nil {
				at := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
				for _, f := range []func() (string, error){
					func() (string, error) {
						return GoldRefresh(bg, loc, testShape(bg.Source), GoldRange{Init: true, Run: "0"})
					},
					func() (string, error) { return GoldTouched(bg, loc, testShape(bg.Source), at, at.Add(time.Hour)) },
					func() (string, error) {
						// The touched groups' filter, as compaction writes it in.
						var touched []any
						if bg.Window != nil {
							touched = []any{at, at.Add(time.Hour)}
						} else {
							touched = []any{int64(-3), int64(7)}
						}
						f, err := GoldTouchedFilter(bg, touched)
						if err != nil {
							return "", err
						}
						return GoldRefresh(bg, loc, testShape(bg.Source), GoldRange{From: at, To: at.Add(time.Hour), Run: "r1", Touched: f})
					},
					func() (string, error) { return GoldRefreshedView(bg, loc) },
					func() (string, error) { return GoldMaintain(bg, loc, at) },
					func() (string, error) {
						if bg.Watermark == nil {
							return "-- no final windows", nil
						}
						create, err := GoldFinal(bg, loc, FinalTable)
						if err != nil {
							return "", err
						}
						emit, err := GoldFinal(bg, loc, FinalAppend)
						if err != nil {
							return "", err
						}
						view, err := GoldFinal(bg, loc, FinalView)
						return create + ";\n\n" + emit + ";\n\n" + view, err
					},
					func() (string, error) {
						if !GoldHasChanges(bg) {
							return "-- no change feed", nil
						}
						return GoldChangesFunction(bg, loc)
					},
				} {
					sql, err := f()
					if err != nil {
						t.Fatal(err)
					}
					got += "\n" + sql + ";\n"
				}
			}
			checkGolden(t, "gold_"+g.Name.Table+".sql", got)
			if m := emptyItem.FindStringIndex(got); m != nil {
				t.Errorf("an empty list item: %q", got[m[0]:m[1]])
			}
		})
	}
}

// No comment line of the SQL bqcdc writes holds an unpaired apostrophe:
// the BigQuery emulator's text rewrites take one for the start of a string
// literal and then rewrite the wrong text (internal/emulator, concession
// 17). The golden files are the renderer's output for every kind of flow.
func TestCommentsPairTheirQuotes(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, l := range strings.Split(string(b), "\n") {
			if i := strings.Index(l, "--"); i >= 0 && strings.TrimSpace(l[:i]) == "" && strings.Count(l, "'")%2 == 1 {
				t.Errorf("%s:%d: a comment with an unpaired apostrophe: %s", f, n+1, l)
			}
		}
	}
	if got := commentText("bob's flows.sql"); strings.Contains(got, "'") {
		t.Errorf("commentText kept an unpaired apostrophe: %q", got)
	}
	if got := commentText("WHERE op = 'D'"); got != "WHERE op = 'D'" {
		t.Errorf("commentText changed paired quotes: %q", got)
	}
}

// Every kind of change-stream flow renders with each option its templates
// branch on (IGNORE NULL UPDATES, TRACK HISTORY on a subset, a truncate,
// a WHERE, composite keys): the golden flows do not hold every
// combination, and a template that fails to execute for one (a field read
// inside a range, say) fails here rather than on the emulator.
func TestEveryOptionRenders(t *testing.T) {
	const head = "CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(users) KEYS (userId, name) APPLY AS DELETE WHEN operation = 'DELETE' "
	rendered := 0
	stored := []string{"STORED AS SCD TYPE 1", "STORED AS SCD TYPE 2", "STORED AS SCD TYPE 2 TRACK HISTORY ON (city)",
		"SYSTEM SEQUENCE BY _cdc_ingested_at STORED AS BITEMPORAL", "SYSTEM SEQUENCE BY _cdc_ingested_at STORED AS BITEMPORAL TRACK HISTORY ON (city)"}
	for _, s := range stored {
		for _, extra := range []string{"", "IGNORE NULL UPDATES", "WHERE city != 'x'"} {
			for _, trunc := range []string{"", "APPLY AS TRUNCATE WHEN operation = 'TRUNCATE' "} {
				text := head + trunc + "SEQUENCE BY sequenceNum COLUMNS * EXCEPT (operation) " + s + " " + extra + ";"
				flows, err := flow.Parse("f.sql", text)
				if err != nil {
					continue // a combination the grammar refuses (a truncate of an SCD 2 flow, say)
				}
				b, err := flow.Bind(flows[0], rendercases.Sources()["users"])
				if err != nil {
					t.Errorf("%s: %v", text, err)
					continue
				}
				if sql := renderAll(t, b); !strings.Contains(sql, "`userId`") {
					t.Errorf("%s: the SQL names no key", text)
				}
				rendered++
			}
		}
	}
	if rendered < 18 {
		t.Errorf("%d combinations rendered, want 18 (the grammar refuses a truncate but in SCD 1)", rendered)
	}
	t.Logf("%d combinations rendered", rendered)
}
