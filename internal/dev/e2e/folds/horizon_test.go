package folds

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/testenv"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
)

const horizonFlows = `
CREATE OR REFRESH STREAMING TABLE hz_history
TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '1')
FLOW AUTO CDC FROM STREAM(` + "`hz.users`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum COLUMNS (userId, name, city, sequenceNum) STORED AS SCD TYPE 2
TRACK HISTORY ON (name);
`

// TestLatenessHorizonDropsOldEvents: with bqcdc.lateness_horizon_days,
// maintenance drops an event that opens no version once it, its version's
// first event and a later event of its version were all ingested more than
// the horizon before the maintenance's watermark, and only those: the
// view, <target>_at at times since the horizon and <target>_changes still
// equal the model over every event. An event ingested later than the
// horizon among dropped events re-cuts versions as the events kept say
// (the view equals the model once the dropped events are gone from the
// changelog too): what the horizon gives up.
func TestLatenessHorizonDropsOldEvents(t *testing.T) {
	e := testenv.New(t, stack, "horizon")
	ctx := context.Background()
	bound := e.ApplySourceFlows(t, "hz.sql", horizonFlows, "hz.users", testenv.UsersImage)
	b := bound[0]
	if b.LatenessHorizonDays != 1 {
		t.Fatalf("flow %s: horizon %d days, want 1", b.Name, b.LatenessHorizonDays)
	}
	at, row := ttClock()
	const day = 24 * 60 // minutes
	old := -3 * day     // well before the horizon (the watermark, about minute 6, less a day)
	e.AppendRows(t, "hz.users", []map[string]any{
		// Key 1: its version's first and last events and the two between,
		// all old: the two between are dropped.
		row(1, "a", "x", "INSERT", 10, "k1a", old),
		row(1, "a", "y", "UPDATE", 20, "k1b", old+1), // dropped
		row(1, "a", "z", "UPDATE", 30, "k1c", old+2), // dropped
		row(1, "a", "w", "UPDATE", 40, "k1d", old+3),
		// Key 2: the only later event of the version is recent, so the
		// old one between is kept (_at since the horizon shows it).
		row(2, "b", "x", "INSERT", 10, "k2a", old),
		row(2, "b", "y", "UPDATE", 20, "k2b", old+1),
		row(2, "b", "z", "UPDATE", 30, "k2c", 1),
		// Key 3: the version's first event came late (recent): kept whole.
		row(3, "c", "x", "INSERT", 10, "k3a", 2),
		row(3, "c", "y", "UPDATE", 20, "k3b", old),
		row(3, "c", "z", "UPDATE", 30, "k3c", old+1),
		// Key 4: a tracked change opens a second version (one dropped
		// event in it), a delete ends it, and a last version of two.
		row(4, "d", "x", "INSERT", 10, "k4a", old),
		row(4, "e", "x", "UPDATE", 20, "k4b", old+1),
		row(4, "e", "y", "UPDATE", 30, "k4c", old+2), // dropped
		row(4, "e", "z", "UPDATE", 40, "k4d", old+3),
		row(4, nil, nil, "DELETE", 50, "k4e", old+4),
		row(4, "f", "x", "INSERT", 60, "k4f", old+5),
		row(4, "f", "y", "UPDATE", 70, "k4g", old+6),
	})
	dropped := []string{"k1b", "k1c", "k4c"}
	check := func(when string, atMinutes ...int) {
		t.Helper()
		e.CheckViews(t, bound, when)
		for _, m := range atMinutes {
			if diff, err := viewcheck.CheckAt(ctx, e.BQ, b, e.Loc, at(m)); err != nil || diff != "" {
				t.Errorf("%s: %s_at(minute %d) differs from the model (%v):\n%s", when, b.Target, m, err, diff)
			}
		}
		if diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || diff != "" {
			t.Errorf("%s: %s_changes differs from the model (%v):\n%s", when, b.Target, err, diff)
		}
	}
	events := func() (n int64, msgs map[string]bool) {
		t.Helper()
		rows, err := e.Query(fmt.Sprintf("SELECT `_cdc_message_id` AS m FROM %s WHERE __op IN ('U', 'D')", e.Loc.StateTable(b.Flow)))
		if err != nil {
			t.Fatal(err)
		}
		msgs = map[string]bool{}
		for _, r := range rows {
			msgs[fmt.Sprint(r["m"])] = true
		}
		return int64(len(rows)), msgs
	}

	e.CompactAt(t, bound, at(6), compact.Options{MaintainEvery: -1})
	check("after the first run", old+2, 0, 3, 7)
	if n, _ := events(); n != 17 {
		t.Errorf("after the first run the state keeps %d events, want all 17 (runs drop nothing)", n)
	}
	maintain := compact.Options{MaintainEvery: time.Minute, MaintainMargin: time.Second, MaintainGranularity: time.Second}
	e.CompactAt(t, bound, at(7), maintain)
	// _at since the horizon (about a day before minute 6) is exact.
	check("after maintenance", -day+60, 0, 1, 3, 7)
	n, kept := events()
	if n != 14 {
		t.Errorf("after maintenance the state keeps %d events, want 14 (17 less %v)", n, dropped)
	}
	for _, m := range dropped {
		if kept[m] {
			t.Errorf("after maintenance event %s is kept; it is older than the horizon, opens no version and a later old event of its version follows", m)
		}
	}
	for _, m := range []string{"k2b", "k3b", "k3c", "k1d", "k4g"} {
		if !kept[m] {
			t.Errorf("after maintenance event %s is dropped; it must be kept", m)
		}
	}

	// A second maintenance changes nothing more.
	e.CompactAt(t, bound, at(9), maintain)
	check("after a second maintenance", -day+60, 3, 7)
	if n, _ := events(); n != 14 {
		t.Errorf("after a second maintenance the state keeps %d events, want 14", n)
	}

	// Late by more than the horizon, among key 1's dropped events: a
	// tracked change at 25. Every event kept would reopen name a at 30; the
	// state re-cuts as the events it kept say: a at 40.
	e.AppendRows(t, "hz.users", []map[string]any{row(1, "q", "k", "UPDATE", 25, "k1late", 10)})
	e.CompactAt(t, bound, at(11), compact.Options{MaintainEvery: -1})
	if diff, err := viewcheck.Check(ctx, e.BQ, b, e.Loc); err != nil || diff == "" {
		t.Errorf("a late event among dropped ones: the view equals the model over every event (%v); the test's late event missed the dropped ones", err)
	}
	if _, err := e.Query(fmt.Sprintf("DELETE FROM %s WHERE `_cdc_message_id` IN ('k1b', 'k1c', 'k4c')", e.Loc.ChangelogTable(b.Flow))); err != nil {
		t.Fatal(err)
	}
	e.CheckViews(t, bound, "a late event among dropped ones, against the events kept")

	// apply says when a flow's horizon is new to its state or shorter
	// than the one its state is labelled with (what the next maintenance
	// drops for good), and nothing otherwise.
	reapply := func(props string) string {
		t.Helper()
		src := strings.Replace(horizonFlows, "TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '1')", props, 1)
		var rep apply.Report
		var notices strings.Builder
		o := e.Apply
		o.Notices = &notices
		if err := apply.FlowObjects(ctx, e.BQ, e.Loc, bindFlows(t, src, b.Changelog)[0], o, &rep); err != nil {
			t.Fatalf("applying %s again with %q: %v", b.Name, props, err)
		}
		md, err := e.BQ.Dataset(e.Loc.Dataset(b.Flow)).Table(catalog.StateName(b.Flow)).Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Every label apply wants, after every apply (the emulator
		// replaces a table's labels with an update's: updateTable repeats
		// them all).
		for _, l := range []string{catalog.LabelLatenessHorizon, catalog.StateLayoutLabel, catalog.SpecLabel, catalog.LabelWatermark} {
			if md.Labels[l] == "" {
				t.Errorf("applied with %q: the state has no %s label (its labels: %v; apply: %q)", props, l, md.Labels, rep)
			}
		}
		return notices.String()
	}
	const horizon = "TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '%d')"
	for _, c := range []struct {
		props, want string
	}{
		{fmt.Sprintf(horizon, 3), ""},
		{fmt.Sprintf(horizon, 3), ""},
		{fmt.Sprintf(horizon, 2), "table hz_history__state: lateness horizon 2 days (was 3 days): from its next maintenance on, events ingested more than 2 days before its watermark that no view needs are dropped from the state for good"},
		{"", ""}, // no horizon: nothing is dropped (the label stays)
		{fmt.Sprintf(horizon, 2), ""},
		{fmt.Sprintf(horizon, 1), "lateness horizon 1 day (was 2 days): from its next maintenance on, events ingested more than 1 day before"},
	} {
		got := reapply(c.props)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("applied with %q: notices %q, want %q", c.props, got, c.want)
		}
	}
}

var horizonSeeds = testenv.SeedFlags("horizon", 3, 1, "random histories of TestLatenessHorizonRandomHistories per kind (each an emulator project: -horizon.seeds 8 for a longer search)")

// TestLatenessHorizonRandomHistories: random histories of a few keys
// (tracked and untracked changes, values shown again unchanged, deletes,
// ties at one sequence, arrival shuffled), in an SCD 2 flow (by
// generation, and in key ranges maintained a range a statement) and a
// bitemporal one, ingested days before a maintenance with a one-day
// horizon, then new events sequenced after them and, for the SCD 2 flows,
// redelivered copies of old messages (dropped ones among them), then
// another maintenance. As no event arrives later than the horizon among
// the events it dropped, the SCD 2 views, their _at since the horizon and
// their _changes, and the bitemporal view (every system time) equal the
// model over every event after every step, and maintenance dropped some of
// each.
func TestLatenessHorizonRandomHistories(t *testing.T) {
	ctx := context.Background()
	const decl = `
CREATE OR REFRESH STREAMING TABLE %s
TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '1'%s)
FLOW AUTO CDC FROM STREAM(` + "`%s`" + `)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum %s
TRACK HISTORY ON (name);
`
	kinds := []struct{ name, props, clauses string }{
		{"scd2", "", "COLUMNS (userId, name, city, sequenceNum) STORED AS SCD TYPE 2"},
		// No sequence shown: an event showing the values of the one before
		// it is no row of the view.
		{"bitemporal", "", "SYSTEM SEQUENCE BY _cdc_ingested_at COLUMNS (userId, name, city) STORED AS BITEMPORAL"},
		// Key ranges of one key each, maintained one range a statement
		// (BucketsPerJob below): the horizon in chunks.
		{"ranges", ", 'bqcdc.state.key_range' = '1:4'", "COLUMNS (userId, name, city, sequenceNum) STORED AS SCD TYPE 2"},
	}
	dropped := map[string]int64{}
	for _, seed := range horizonSeeds() {
		for _, kind := range kinds {
			r := rand.New(rand.NewSource(seed))
			e := testenv.New(t, stack, testenv.Project("horizon-"+kind.name, seed))
			source := fmt.Sprintf("hzr.%s%d", kind.name, seed)
			bound := e.ApplySourceFlows(t, "hzr.sql", fmt.Sprintf(decl, fmt.Sprintf("hzr_%s_%d", kind.name, seed), kind.props, source, kind.clauses), source, testenv.UsersImage)
			b := bound[0]
			at, _ := ttClock()
			const day = 24 * 60
			newMsg := testenv.MessageIDs(r)
			event := func(key, seq int64, minute int) map[string]any {
				op, name, city := "UPDATE", any(testenv.Pick(r, "a", "a", "a", "b")), any(testenv.Pick(r, "x", "y", "z"))
				if r.Intn(8) == 0 {
					op, name, city = "DELETE", nil, nil
				}
				return map[string]any{"userId": key, "name": name, "city": city, "operation": op, "sequenceNum": seq,
					"_cdc_message_id": newMsg(), "_cdc_ingested_at": at(minute).UnixMicro()}
			}
			var old []map[string]any
			next := map[int64]int64{}
			for key := int64(1); key <= 3; key++ {
				for i := 0; i < 6+r.Intn(10); i++ {
					next[key] += int64(r.Intn(3)) // ties at one sequence now and then
					old = append(old, event(key, next[key], -3*day+r.Intn(120)))
				}
			}
			r.Shuffle(len(old), func(i, j int) { old[i], old[j] = old[j], old[i] })
			e.AppendRows(t, source, old)
			when := fmt.Sprintf("%s, seed %d", kind.name, seed)
			check := func(step string, minutes ...int) {
				t.Helper()
				e.CheckViews(t, bound, when+", "+step)
				if b.SystemSequence != nil {
					return // no _at or _changes: the view is every system time
				}
				for _, m := range minutes {
					if diff, err := viewcheck.CheckAt(ctx, e.BQ, b, e.Loc, at(m)); err != nil || diff != "" {
						t.Errorf("%s, %s: %s_at(minute %d) differs from the model (%v):\n%s", when, step, b.Target, m, err, diff)
					}
				}
				if diff, err := viewcheck.CheckChanges(ctx, e.BQ, b, e.Loc, time.Time{}, time.Time{}); err != nil || diff != "" {
					t.Errorf("%s, %s: %s_changes differs from the model (%v):\n%s", when, step, b.Target, err, diff)
				}
			}
			stored := func() int64 {
				t.Helper()
				rows, err := e.Query(fmt.Sprintf("SELECT COUNT(*) AS n FROM %s WHERE __op IN ('U', 'D')", e.Loc.StateTable(b.Flow)))
				if err != nil {
					t.Fatal(err)
				}
				return rows[0]["n"].(int64)
			}
			maintain := compact.Options{MaintainEvery: time.Minute, MaintainMargin: time.Second, MaintainGranularity: time.Second, BucketsPerJob: 2}
			e.CompactAt(t, bound, at(2), compact.Options{MaintainEvery: -1})
			before := stored()
			if reps := e.CompactAt(t, bound, at(3), maintain); b.StateKeyRange != nil && reps[0].Jobs < 3 {
				t.Errorf("%s: maintenance in %d jobs, want one a key range at least", when, reps[0].Jobs)
			}
			dropped[kind.name] += before - stored()
			// _at just after the horizon (where dropping is closest to
			// showing) and now.
			check("after maintenance", -day+60, 3)

			// New events after every old sequence, and (SCD 2) copies of
			// old messages: a bitemporal flow whose system time is the
			// ingestion time would learn a copy of a dropped event as a
			// correction (docs/compaction.md).
			var fresh []map[string]any
			for key := int64(1); key <= 3; key++ {
				for i := 0; i < r.Intn(4); i++ {
					next[key] += 1 + int64(r.Intn(2))
					fresh = append(fresh, event(key, next[key], 4+r.Intn(3)))
				}
			}
			for i := 0; b.SystemSequence == nil && i < 1+r.Intn(4); i++ {
				c := maps.Clone(old[r.Intn(len(old))])
				c["_cdc_ingested_at"] = at(4 + r.Intn(3)).UnixMicro()
				fresh = append(fresh, c)
			}
			e.AppendRows(t, source, fresh)
			check("new events and redelivered copies in the tail", -day+60, 7)
			e.CompactAt(t, bound, at(8), compact.Options{MaintainEvery: -1})
			check("after folding them", -day+60, 7)
			e.CompactAt(t, bound, at(10), maintain)
			check("after a second maintenance", -day+60, 5, 9)
		}
	}
	for _, kind := range kinds {
		switch {
		case dropped[kind.name] > 0:
		case len(horizonSeeds()) == 1:
			// One history (-horizon.seed): it may be one that ends
			// before anything is old enough to drop.
			t.Logf("%s: this history dropped no event (checked all the same)", kind.name)
		default:
			t.Errorf("%s: no maintenance dropped an event: the histories did not exercise the horizon", kind.name)
		}
	}
	t.Logf("maintenance dropped %v events over %d histories each", dropped, len(horizonSeeds()))
}

// TestLatenessHorizonBitemporal: with a horizon, maintenance drops a
// bitemporal event that shows the values of the event before it, learnt no
// later, once it is older than the horizon (a run of them, and a
// correction restating its business time's values), and keeps one learnt
// before the event it follows, and one within the horizon: the view (every
// system time) equals the model over every event. A correction learnt
// later than the horizon, of an event before dropped ones, is folded as
// the events kept say.
func TestLatenessHorizonBitemporal(t *testing.T) {
	e := testenv.New(t, stack, "horizon-bitemporal")
	bound := e.ApplySourceFlows(t, "hzb.sql", `
CREATE OR REFRESH STREAMING TABLE hzb_history
TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '1')
FLOW AUTO CDC FROM STREAM(`+"`hzb.users`"+`)
KEYS (userId) APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (userId, name, city) STORED AS BITEMPORAL
TRACK HISTORY ON (name);
`, "hzb.users", testenv.UsersImage)
	b := bound[0]
	at, row := ttClock()
	const day = 24 * 60
	old := -3 * day
	e.AppendRows(t, "hzb.users", []map[string]any{
		row(1, "a", "x", "INSERT", 10, "k1a", old),
		row(1, "a", "x", "UPDATE", 20, "k1b", old+1), // unseen: dropped
		row(1, "a", "x", "UPDATE", 30, "k1c", old+2), // unseen after an unseen one: dropped
		row(1, "a", "y", "UPDATE", 40, "k1d", old+3),
		row(2, "a", "x", "INSERT", 10, "k2a", old+5),
		row(2, "a", "x", "UPDATE", 20, "k2b", old), // learnt before the event before it: a row of its own then
		row(3, "a", "x", "INSERT", 10, "k3a", old),
		row(3, "a", "x", "UPDATE", 20, "k3b", 1), // within the horizon
		row(4, "a", "x", "INSERT", 10, "k4a", old),
		row(4, "a", "x", "UPDATE", 10, "k4b", old+1), // a correction restating its business time: dropped
		row(4, "b", "x", "UPDATE", 20, "k4c", old+2),
	})
	e.CompactAt(t, bound, at(6), compact.Options{MaintainEvery: -1})
	e.CheckViews(t, bound, "after the first run")
	e.CompactAt(t, bound, at(7), compact.Options{MaintainEvery: time.Minute, MaintainMargin: time.Second, MaintainGranularity: time.Second})
	e.CheckViews(t, bound, "after maintenance")
	rows, err := e.Query(fmt.Sprintf("SELECT `_cdc_message_id` AS m FROM %s WHERE __op IN ('U', 'D')", e.Loc.StateTable(b.Flow)))
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, r := range rows {
		kept[fmt.Sprint(r["m"])] = true
	}
	for _, m := range []string{"k1a", "k1d", "k2a", "k2b", "k3a", "k3b", "k4a", "k4c"} {
		if !kept[m] {
			t.Errorf("event %s dropped; it must be kept", m)
		}
	}
	for _, m := range []string{"k1b", "k1c", "k4b"} {
		if kept[m] {
			t.Errorf("event %s kept; it is unseen and older than the horizon", m)
		}
	}
	if len(rows) != 8 {
		t.Errorf("the state keeps %d events, want 8", len(rows))
	}

	// A correction of key 1's first business time, learnt later than the
	// horizon, that changes its tracked name: with every event kept, name a
	// would open a version again at 20; the state keeps none there, so the
	// corrected version runs to 40.
	e.AppendRows(t, "hzb.users", []map[string]any{row(1, "q", "z", "UPDATE", 10, "k1late", 10)})
	e.CompactAt(t, bound, at(11), compact.Options{MaintainEvery: -1})
	if diff, err := viewcheck.Check(context.Background(), e.BQ, b, e.Loc); err != nil || diff == "" {
		t.Errorf("a late correction before dropped events: the view equals the model over every event (%v); the test's correction missed them", err)
	}
	if _, err := e.Query(fmt.Sprintf("DELETE FROM %s WHERE `_cdc_message_id` IN ('k1b', 'k1c', 'k4b')", e.Loc.ChangelogTable(b.Flow))); err != nil {
		t.Fatal(err)
	}
	e.CheckViews(t, bound, "a late correction before dropped events, against the events kept")
}
