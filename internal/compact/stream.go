package compact

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/sql/render"
)

// A change-stream flow (SCD 1, SCD 2, bitemporal) keeps its state in
// levels: each run appends one, the events that decide the target among
// the changelog rows it folds (SCD 1: per key the newest event, the newest
// delete and the newest setter of each IGNORE NULL UPDATES column; SCD 2:
// every distinct event), and reads no state to do it. Views fold every
// level with the changelog tail. Once a day (Options.MaintainEvery) a run
// folds the levels into one, so the state stays about the size of what
// decides the target. A flow with a change feed also gets, per run, the
// rows of its change feed for the positions it folds (render, changes.sql.tmpl),
// which read the state of the keys the run touches only.

// streamRun is one run of a change-stream flow.
type streamRun struct {
	*run
	plan *render.Compaction

	from      time.Time // the watermark the run starts from (labels, or the state's marker)
	foldedMax time.Time // newest _cdc_ingested_at folded before the run
	st        streamStats
	reached   time.Time // every changelog row ingested by then is visible
	watermark time.Time // the watermark the run leaves
	newMax    time.Time // the folded max it leaves
	gen       time.Time
	changes   bool // materialize the change feed of (st.changesUntil, watermark]
	// changesBehind: the run left part of that range for the next one.
	changesBehind bool
	// changesReached: the position the change feed is materialized to.
	changesReached time.Time
	// held: the feed was off and is on again over its old change table,
	// which is to be rebuilt, not continued (catalog.LabelFeedOff).
	held       bool
	maintained bool
	// historyOff: the state's history is labelled whole, but the flow no
	// longer keeps one (render/history.go).
	historyOff bool
	nextLabels labels
}

type streamStats struct {
	events, withoutSequence, unfolded, keys, truncates int64
	newest                                             time.Time
	newestSource                                       time.Time // zero: none
	tail                                               int64     // rows after the run's new watermark
	keyLo, keyHi                                       []any
	keyNulls                                           int64
	changesUntil                                       time.Time // Epoch: never materialized
	hasKeys                                            bool      // the statistics returned the key ranges or buckets
	buckets                                            []int64   // a state of buckets: the touched keys' (nil: none returned)
}

// readKeys reads the touched keys of a statistics row: the key ranges
// and, of a state of buckets, the buckets.
func (st *streamStats) readKeys(row statsRow) {
	if lo, ok := row[render.OutKeyLo]; ok {
		st.hasKeys, st.keyLo, st.keyHi = true, values(lo), values(row[render.OutKeyHi])
	}
	if bs, ok := row[render.OutBuckets]; ok {
		st.hasKeys, st.buckets = true, []int64{}
		for _, v := range values(bs) {
			if n, ok := v.(int64); ok {
				st.buckets = append(st.buckets, n)
			}
		}
	}
}

// keysOutside reports whether a touched key falls outside r, a state's
// key range (the statistics' tiles of the first key; NULL keys, in the
// NULL partition, are not outside), and the least and greatest touched
// keys.
func (st *streamStats) keysOutside(r *flow.KeyRange) (lo, hi int64, outside bool) {
	for i := range st.keyLo {
		l := int64Of(st.keyLo[i])
		h := l
		if i < len(st.keyHi) {
			h = int64Of(st.keyHi[i])
		}
		if i == 0 || l < lo {
			lo = l
		}
		if i == 0 || h > hi {
			hi = h
		}
		outside = outside || l < r.Start || h >= r.End
	}
	return lo, hi, outside
}

func (s *streamRun) read(ctx context.Context) (bool, error) {
	b, l := s.t.b, s.t.labels
	s.plan = s.t.p.Compaction()
	s.from, s.foldedMax = l.watermark, l.foldedMax
	switch {
	case stateEmpty(s.t.state):
		// No row, so no marker: the run reads the changelog from the start
		// (labels on an empty state table lead it: its rows were deleted).
		s.from, s.foldedMax = render.Epoch, render.Epoch
	case !l.known:
		// A state table without labels (made by an older bqcdc, or labels
		// lost): its newest marker says where it stands.
		if err := s.readMarker(ctx); err != nil {
			return false, err
		}
	}
	s.rep.WatermarkBefore, s.rep.WatermarkAfter = s.from, s.from
	s.reached = s.now.Add(-s.c.opts.VisibilityLag).Truncate(time.Microsecond)
	if err := s.readStats(ctx); err != nil {
		return false, err
	}
	s.rep.EventsRead, s.rep.WithoutSequence, s.rep.KeysTouched = s.st.events, s.st.withoutSequence, s.st.keys
	if s.st.newest.After(render.Epoch) {
		s.rep.LastIngestedAt = s.st.newest
	}
	s.rep.NewestSourceTS, s.rep.TailRows = s.st.newestSource, &s.st.tail
	if r := b.StateKeyRange; r != nil {
		if lo, hi, outside := s.st.keysOutside(r); outside {
			// Keys past the range (an auto-increment key outgrowing it)
			// share __UNPARTITIONED__, which the feed and lookups prune by
			// clustering only: said once a run, as it happens, with a range
			// that holds them and room to grow (the run's keys only: the
			// state's may reach further).
			s.rep.KeysOutsideRange = true
			fix := "widen " + flow.StateKeyRangeProperty + " and run bqcdc apply (it moves the state once)"
			if w, ok := r.Widened(lo, hi); ok {
				s.rep.KeyRangeSuggested = fmt.Sprintf("%d:%d", w.Start, w.End)
				fix = fmt.Sprintf("widen %s (to '%s' or more: this run's keys %d to %d) and run bqcdc apply (it moves the state once)", flow.StateKeyRangeProperty, s.rep.KeyRangeSuggested, lo, hi)
			}
			s.c.opts.Log.Warn("keys outside the state's key range", "event", "keys_outside_range", "flow", b.Name,
				"range", fmt.Sprintf("%d:%d", r.Start, r.End), "fix", fix)
		}
	}
	s.gen = generation(s.now, l.checked)
	sig := signature(s.t.changelog)
	s.nextLabels = labels{known: true, sig: sig, sigSeen: s.now, checked: s.now, maintained: l.maintained}
	switch {
	case render.HistoryKept(b):
		s.nextLabels.history = l.history // kept where an update replaces every label (the emulator)
	case l.history == "1":
		// The flow's history was turned off: its runs no longer copy
		// what they fold, so the history is marked incomplete
		// (historyOff), and turned on again apply fills it anew.
		s.historyOff = true
	}
	if sig == l.sig && !l.sigSeen.IsZero() {
		s.nextLabels.sigSeen = l.sigSeen
	}
	todo := s.st.unfolded > 0
	s.watermark, s.newMax = s.from, s.foldedMax
	if todo {
		s.watermark = s.reached
		if s.watermark.Before(s.from) {
			s.watermark = s.from
		}
		// The fold reads the rows up to the new watermark; later ones stay
		// in the tail, and are unfolded for the next run.
		n := s.st.newest
		if n.After(s.watermark) {
			n = s.watermark
		}
		if n.After(s.newMax) {
			s.newMax = n
		}
	} else {
		// Nothing ingested since the last fold: no level, same watermark.
		// Every row ingested by reached was visible to the query and is
		// folded, so the signature is clean if it was seen by then.
		s.rep.Outcome = UpToDate
	}
	s.changes = b.ChangeFeed() && s.st.changesUntil.Before(s.watermark)
	if l.feedOff == "1" {
		s.nextLabels.feedOff = "0" // cleared unless off or held again below
	}
	switch {
	case b.ChangeFeedOff():
		s.nextLabels.feedOff = "1"
	case b.ChangeFeed() && l.feedOff == "1" && s.st.changesUntil.After(render.Epoch):
		// The feed was off while maintenance may have reduced the events
		// its missed positions need: continuing it would read updates as
		// inserts. It stays held until its change table is emptied (then
		// the feed is rebuilt from the flow's first position, and the
		// label goes).
		s.changes, s.changesBehind, s.held, s.nextLabels.feedOff = false, true, true, "1"
		s.rep.FeedHeld = fmt.Sprintf("the change feed was off (TBLPROPERTIES) and is on again: drop %s and run bqcdc apply to rebuild it from the changelog", s.c.loc.ChangesTable(b.Flow))
		s.c.opts.Log.Warn("change feed held", "event", "change_feed_held", "flow", b.Name, "reason", s.rep.FeedHeld)
	}
	if s.changes && s.c.opts.ChangeFeedEvery > 0 && s.st.changesUntil.After(render.Epoch) &&
		s.watermark.Sub(s.st.changesUntil) < s.c.opts.ChangeFeedEvery {
		// Not yet: a later run materializes a longer range at once. The
		// flow is not idle meanwhile (the feed lags).
		s.changes, s.changesBehind = false, true
	}
	s.rep.WatermarkAfter = s.watermark
	return todo, nil
}

func (s *streamRun) readMarker(ctx context.Context) error {
	row, err := s.markerRow(ctx, s.plan.Marker, "the watermark")
	if err != nil {
		return err
	}
	s.from = ts(row[catalog.ColStateWatermark], render.Epoch)
	s.foldedMax = ts(row[render.OutFoldedMax], render.Epoch)
	return nil
}

func (s *streamRun) readStats(ctx context.Context) error {
	newW := s.reached
	if newW.Before(s.from) {
		newW = s.from
	}
	sql, err := s.plan.Stats(render.Run{Watermark: s.from, FoldedMax: s.foldedMax, NewWatermark: newW})
	if err != nil {
		return err
	}
	row, err := s.c.stats(ctx, sql, s.acct, "what to fold")
	if err != nil {
		return err
	}
	s.st = streamStats{events: row.n(render.OutEvents), withoutSequence: row.n(render.OutWithoutSequence), unfolded: row.n(render.OutUnfolded),
		keys: row.n(render.OutKeys), truncates: row.n(render.OutTruncates), keyNulls: row.n(render.OutKeyNulls),
		newest: ts(row[render.OutNewest], render.Epoch), newestSource: ts(row[render.OutNewestSourceTS], time.Time{}),
		tail: row.n(render.OutTailRows), changesUntil: ts(row[render.OutChangesUntil], render.Epoch)}
	s.st.readKeys(row)
	return nil
}

// values returns an ARRAY result's elements (nil for a NULL array).
func values(v bigquery.Value) []any {
	vs, _ := v.([]bigquery.Value)
	out := make([]any, len(vs))
	for i, x := range vs {
		out[i] = x
	}
	return out
}

func (s *streamRun) runParams() render.Run {
	r := render.Run{Watermark: s.from, FoldedMax: s.newMax, Generation: s.gen, NewWatermark: s.watermark,
		TombstoneCutoff: s.c.tombstoneCutoff(s.now), Cutoff: s.now.Add(-s.c.opts.MaintainMargin).Truncate(s.c.opts.MaintainGranularity), ChangesFrom: s.st.changesUntil}
	if s.t.b.ChangeFeed() && s.c.opts.ChangeSlice > 0 {
		r.Slice = s.c.opts.ChangeSlice // the fold keeps every slice's baseline
	}
	return r
}

// sliceEnd is the end of the change feed's slice that starts after from:
// the next multiple of Options.ChangeSlice since the Unix epoch (the
// boundaries within which the fold keeps each key's deciding events),
// at most the watermark.
func (s *streamRun) sliceEnd(from time.Time) time.Time {
	w := s.c.opts.ChangeSlice.Microseconds()
	if w <= 0 {
		return s.watermark
	}
	us := from.UnixMicro()
	end := time.UnixMicro((us/w + 1) * w).UTC()
	if us < 0 || end.After(s.watermark) {
		return s.watermark
	}
	return end
}

func (s *streamRun) fold(ctx context.Context) error {
	s.rep.Generation = s.gen
	for _, ch := range s.foldChunks() {
		p := s.runParams()
		p.Chunk = ch
		sql, err := s.plan.Fold(p)
		if err != nil {
			return err
		}
		res, err := s.c.exec(ctx, StepFold, sql, s.acct)
		if err != nil {
			return fmt.Errorf("folding: %w", err)
		}
		s.rep.RowsWritten += res.RowsAffected
		if ch != nil && !ch.Last {
			if err := s.step(StepFoldChunk); err != nil {
				return err
			}
		}
	}
	return nil
}

// foldChunks are the bucket (or key range) ranges a run's fold is
// written in: one statement (a nil range) unless the state has buckets or
// key ranges and the run touches more than a statement may write
// (Options.BucketsPerJob); then contiguous ranges of [0, buckets) holding
// at most that many touched buckets each, so a row the statistics did not
// see still falls in one.
func (s *streamRun) foldChunks() []*render.BucketChunk {
	return render.FoldChunks(render.ChunkedPartitions(s.t.b), render.PerJob(s.t.b, s.c.opts.BucketsPerJob), s.st.buckets)
}

// maintainChunks are the bucket ranges maintenance writes in: one
// statement (a nil range) unless the state has more buckets than
// Options.BucketsPerJob; then ranges of that many.
func (s *streamRun) maintainChunks() []*render.BucketChunk {
	return render.MaintainChunks(s.t.b, s.c.opts.BucketsPerJob)
}

func (s *streamRun) after(ctx context.Context) error {
	if s.historyOff {
		// Its markers go (one DML statement over their partition), so
		// neither apply nor <target>_at takes the history for whole.
		if _, err := s.c.exec(ctx, StepHistoryOff, render.HistoryUnmark(s.t.b, s.c.loc), s.acct); err != nil {
			return fmt.Errorf("marking the history incomplete: %w", err)
		}
		s.nextLabels.history = "0"
	}
	// Maintenance folds what runs before this one folded: nothing on a
	// flow's first run.
	due := s.c.maintenanceDue(s.t.labels, s.now, s.t.p) && s.from.After(render.Epoch)
	if s.changes {
		if err := s.materializeChanges(ctx); err != nil {
			return err
		}
		if err := s.refreshGolds(ctx, s.changesReached, due); err != nil {
			return err
		}
	}
	if due {
		if err := s.maintain(ctx); err != nil {
			return err
		}
		s.nextLabels.maintained = s.now
		if err := s.step(StepGC); err != nil {
			return err
		}
	}
	return nil
}

// materializeChanges writes the change feed's rows of the positions in
// (changes until, watermark]. It reads the state of the keys the range's
// events touch only: the statistics' keys when the range starts at the
// run's watermark, else (a feed that lags: Options.ChangeFeedEvery, or a
// run that left part of its range) those of one more statistics query over
// the changelog in the slice (feedKeys); every key with a truncate in
// the slice, or for a key that cannot be filtered.
//
// A range longer than Options.ChangeSlice (the feed's first run over a
// long history: a new flow, or the upgrade to this layout) is written one
// slice per statement, at most MaxChangeSlices a run, each committed with
// its marker: the work of a statement grows with the positions it covers
// times the events of their keys, which over years of a hot key would
// exceed what BigQuery gives one query. Each slice reads the state of its
// own keys only. A feed not caught up leaves its flow unclean, so the next
// run goes on.
func (s *streamRun) materializeChanges(ctx context.Context) error {
	from := s.st.changesUntil
	if !from.After(render.Epoch) {
		// Never materialized: start at the flow's first event.
		first, err := s.firstPosition(ctx)
		if err != nil {
			return err
		}
		if first.After(s.watermark) {
			first = s.watermark.Add(time.Microsecond) // nothing to feed yet: only the marker
		}
		from = first.Add(-time.Microsecond)
	}
	// (A first slice is written even when nothing is to be fed: its marker
	// says so.)
	for slice := 0; slice < s.c.opts.MaxChangeSlices && (slice == 0 || from.Before(s.watermark)); slice++ {
		to := s.sliceEnd(from)
		keys, err := s.feedKeys(ctx, from, to)
		if err != nil {
			return err
		}
		p := s.runParams()
		p.ChangesFrom, p.ChangesTo, p.Keys = from, to, keys
		if p.Archived, err = s.archiveRead(ctx, p); err != nil {
			return err
		}
		sql, err := s.plan.Changes(p)
		if err != nil {
			return err
		}
		if _, err := s.c.exec(ctx, StepChanges, sql, s.acct); err != nil {
			return fmt.Errorf("materializing the change feed from %s to %s: %w", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), err)
		}
		if err := s.step(StepChanges); err != nil {
			return err
		}
		from = to
	}
	s.changesBehind = from.Before(s.watermark)
	s.changesReached = from
	return nil
}

// feedKeys is the filter on the state's keys of a change feed's slice
// (from, to]: the statistics' keys when the slice is the run's range; for
// any other slice (a feed that lags, a day of a first materialization),
// the keys of the changelog rows in the slice, read by the statistics
// query over them (billed for the changelog of the slice, not the state),
// when the state is larger than Options.FeedKeysAbove; below it, the
// statistics' keys for a slice inside the run's range (a superset), else
// every key. nil (every key) with a truncate in the slice, or when the
// statistics give no key ranges.
func (s *streamRun) feedKeys(ctx context.Context, from, to time.Time) (*render.KeyFilter, error) {
	st := s.st
	inRun := !from.Before(s.from)
	if exact := from.Equal(s.from) && !to.Before(s.watermark); !exact {
		small := s.smallState()
		switch {
		case small && inRun:
			return keyFilter(s.st), nil // the whole state costs less than the query
		case small:
			return nil, nil
		}
		sql, err := s.plan.Stats(render.Run{Watermark: from, FoldedMax: s.foldedMax, NewWatermark: to})
		if err != nil {
			return nil, err
		}
		row, err := s.c.stats(ctx, sql, s.acct, "the keys of the change feed's slice")
		if err != nil {
			return nil, err
		}
		st = streamStats{truncates: row.n(render.OutTruncates), keyNulls: row.n(render.OutKeyNulls)}
		st.readKeys(row)
	}
	return keyFilter(st), nil
}

// archiveRead is how the change feed's statement p reads a state with an
// archive of closed versions (render/archive.go): the levels of the
// touched keys, and the archive of those the Late query finds late, or of
// every touched key when the range starts before the archive's watermark
// (a feed rebuilt from its start) or the archive was split otherwise (the
// flow was edited since). nil (every generation): the flow's
// state is not archived, was never maintained (no archive yet), is at
// most Options.FeedKeysAbove (read whole, it costs less than the Late
// query's 10 MB minimum), or the feed reads every key anyway.
func (s *streamRun) archiveRead(ctx context.Context, p render.Run) (*render.ArchiveRead, error) {
	if p.Keys == nil || !render.Archives(s.t.b) || s.t.labels.maintained.IsZero() {
		return nil, nil
	}
	if s.smallState() {
		return nil, nil
	}
	sql, err := s.plan.Late(p)
	if err != nil {
		return nil, err
	}
	row, err := s.c.one(ctx, StepLate, sql, s.acct)
	if err != nil {
		return nil, fmt.Errorf("reading the change feed's late keys: %w", err)
	}
	w, archived := row[render.OutArchiveWatermark].(time.Time)
	switch {
	case !archived:
		return &render.ArchiveRead{}, nil // no archive: the levels are the state
	case p.ChangesFrom.Before(w), row[render.OutArchiveCurrent] != true:
		// A feed rebuilt from its start, or a flow whose split changed
		// (TRACK HISTORY, SEQUENCE BY) since the archive was written.
		return &render.ArchiveRead{Late: p.Keys}, nil
	case statsRow(row).n(render.OutLateKeys) == 0:
		return &render.ArchiveRead{}, nil
	}
	late := &render.KeyFilter{Lo: values(row[render.OutLateLo]), Hi: values(row[render.OutLateHi]), Null: statsRow(row).n(render.OutLateNulls) > 0}
	if s.t.b.StateBuckets > 0 {
		late.Buckets = []int64{}
		for _, v := range values(row[render.OutLateBuckets]) {
			late.Buckets = append(late.Buckets, int64Of(v))
		}
	}
	return &render.ArchiveRead{Late: late}, nil
}

// smallState reports a state of at most Options.FeedKeysAbove bytes:
// read whole by the change feed, it costs less than a query's 10 MB
// minimum that would narrow the read (the keys of a lagging slice, an
// archive's late keys).
func (s *streamRun) smallState() bool {
	above := s.c.opts.FeedKeysAbove
	return above >= 0 && s.stateBytes() <= above
}

// stateBytes is what the state holds once the run's fold is in: its
// table's bytes, or on a first fold (from the epoch: a new flow, an
// emptied state) the changelog's, which it is about to fold whole, when
// larger. (The metadata was read before the fold.)
func (s *streamRun) stateBytes() int64 {
	var n int64
	if s.t.state != nil {
		n = s.t.state.NumBytes
	}
	if !s.from.After(render.Epoch) && s.t.changelog != nil {
		n = max(n, s.t.changelog.NumBytes)
	}
	return n
}

// keyFilter is the filter on the keys statistics st give; nil (every key)
// with a truncate, or without key ranges.
func keyFilter(st streamStats) *render.KeyFilter {
	if !st.hasKeys || st.truncates > 0 {
		return nil
	}
	return &render.KeyFilter{Lo: st.keyLo, Hi: st.keyHi, Null: st.keyNulls > 0, Buckets: st.buckets}
}

// firstPosition reads the ingestion time of the flow's oldest event (one
// query, on a change feed's first run); far in the future when none.
func (s *streamRun) firstPosition(ctx context.Context) (time.Time, error) {
	sql, err := s.plan.FirstPosition()
	if err != nil {
		return time.Time{}, err
	}
	row, err := s.c.one(ctx, StepFirst, sql, s.acct)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the flow's first position: %w", err)
	}
	return ts(row[render.OutFirstPosition], s.watermark.Add(time.Microsecond)), nil
}

// maintain folds the state's levels ingested by the watermark the run
// started from into one and deletes the levels it folded, in two statements: the INSERT is the commit point, and until the
// DELETE both count, which folds the same. It reads the whole state, once
// a day (Options.MaintainEvery).
func (s *streamRun) maintain(ctx context.Context) error {
	p := s.runParams()
	// Events are reduced only as of a position every reader of the state
	// has passed: for a flow with a change feed, also the position the
	// feed is materialized to, since each later position still needs the
	// events before it as its baseline (a feed behind: ChangeFeedEvery, or
	// a first materialization of a long history, a day of positions a
	// slice). Later events are kept as they are. A held feed is rebuilt
	// from the changelog, so its old position binds nothing.
	if s.t.b.ChangeFeed() && !s.held {
		fed := s.st.changesUntil
		if s.changes {
			fed = s.changesReached
		}
		if fed.Before(p.Watermark) {
			p.Watermark = fed
		}
	}
	// A state of closed versions apart (render/archive.go): only when
	// the feed binds the watermark (a held feed is rebuilt from its start:
	// its reads take every generation anyway).
	switch {
	case !render.Archives(s.t.b) || s.held:
	case s.t.b.StateBuckets > 0:
		// A state of buckets archives into its buckets' second range of
		// partitions, at the maintenance's generation: no day to pick.
		p.Archive = render.ArchiveSlot(p.Generation, nil)
	default:
		slot, err := s.archiveSlot(ctx, p.Generation)
		if err != nil {
			return err
		}
		p.Archive = slot
	}
	// Every range is folded before any is deleted: a crash in between
	// leaves levels and their fold side by side, which count once.
	chunks := s.maintainChunks()
	for _, ch := range chunks {
		p.Chunk = ch
		sql, err := s.plan.Maintain(p)
		if err != nil {
			return err
		}
		if _, err := s.c.exec(ctx, StepMaintain, sql, s.acct); err != nil {
			return fmt.Errorf("folding the state's levels: %w", err)
		}
		if ch != nil && !ch.Last {
			if err := s.step(StepMaintainChunk); err != nil {
				return err
			}
		}
	}
	for _, ch := range chunks {
		p.Chunk = ch
		sql, err := s.plan.MaintainGC(p)
		if err != nil {
			return err
		}
		if _, err := s.c.exec(ctx, StepMaintainGC, sql, s.acct); err != nil {
			return fmt.Errorf("deleting the levels folded: %w", err)
		}
	}
	s.rep.Maintained = true
	return nil
}

// archiveSlot is the archive day a maintenance of generation gen writes:
// one no archive marker of the state names (render.ArchiveSlot).
func (s *streamRun) archiveSlot(ctx context.Context, gen time.Time) (time.Time, error) {
	sql, err := s.plan.ArchiveSlots()
	if err != nil {
		return time.Time{}, err
	}
	row, err := s.c.one(ctx, StepArchiveSlots, sql, s.acct)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the state's archive days: %w", err)
	}
	var used []time.Time
	for _, v := range values(row[render.OutSlots]) {
		used = append(used, time.UnixMicro(int64Of(v)).UTC())
	}
	return render.ArchiveSlot(gen, used), nil
}

func (s *streamRun) view(ctx context.Context) error {
	hint := s.t.labels.watermark
	if s.plan != nil {
		hint = s.watermark
	}
	return s.viewOnce(hint.Format(time.RFC3339Nano), func() error {
		jobs, err := s.c.objs.View(ctx, s.t.b, hint)
		s.acct.jobs += jobs
		if err != nil {
			return fmt.Errorf("updating the view (pruning bound %s): %w", hint.Format(time.RFC3339), err)
		}
		return nil
	})
}

func (s *streamRun) next() (labels, bool) {
	l := s.nextLabels
	l.watermark, l.foldedMax = s.watermark, s.newMax
	// Every row ingested by the new watermark is folded; a run that found
	// nothing to fold checked every row ingested by reached.
	l.reached = s.watermark
	if s.rep.Outcome == UpToDate && s.reached.After(l.reached) {
		l.reached = s.reached
	}
	// Clean: the run folded every row the signature reflects (those rows
	// were appended before it was read, so by its first sighting).
	l.clean = !s.watermark.Before(l.sigSeen)
	if s.rep.Outcome == UpToDate {
		l.clean = !s.reached.Before(l.sigSeen)
	}
	if s.changesBehind {
		l.clean = false // the next run goes on materializing the feed
	}
	return l, true
}

// maintenanceDue reports whether a run should fold the state's levels:
// MaintainEvery after the last time (never folded: now). An SCD 2 (or
// bitemporal) state's levels are its distinct events already, so folding
// them only drops the copies a crashed run left and the markers: a seventh
// as often.
func (c *Compactor) maintenanceDue(l labels, now time.Time, p *plan.Plan) bool {
	if c.opts.MaintainEvery < 0 {
		return false
	}
	every := p.MaintainEvery(c.opts.MaintainEvery)
	return l.maintained.IsZero() || now.Sub(l.maintained) >= every
}

func (c *Compactor) tombstoneCutoff(now time.Time) time.Time {
	if c.opts.TombstoneRetention <= 0 {
		return render.Epoch
	}
	return now.Add(-c.opts.TombstoneRetention)
}
