package compact

import (
	"context"
	"fmt"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/sql/render"
)

// A snapshot flow (AUTO CDC FROM SNAPSHOT) reads a user's table of
// snapshots, not a changelog: its state holds what is applied up to an
// applied version (render, snapshot.go), and a run applies the snapshots
// newer than it:
//
//   - idle (no query) while the table's metadata signature is the one the
//     last run left clean: every row it reflects was read;
//   - else the marker (1 job: the applied version, read from the state) and
//     the statistics (1 job: the rows of newer snapshots, read with the
//     applied version as a constant bound, so BigQuery prunes the older
//     snapshots of a table partitioned or clustered by its version, and
//     the table's row count);
//   - if there are newer snapshots, the fold (1 job: one INSERT of the new
//     generation and its marker, the commit point) and the clean-up (1
//     job).
//
// A run's cost is the newer snapshots plus the state's current rows (SCD
// 1) or open versions (SCD 2): a new snapshot is the unit of change, and
// diffing it needs the one before. Closed versions are written once and
// never read by compaction again. A snapshot loaded with a version at or
// before the applied one is skipped; the rows the table holds beyond those
// processed and the newer ones are reported as RowsSkipped.

// sourceName is what a report names as a flow's source: its topic, or a
// snapshot flow's dataset.table.
func sourceName(b *flow.Bound) string { return b.Reads() }

// snapshotRun is one run of a snapshot flow.
type snapshotRun struct {
	*run
	plan    *render.SnapshotCompaction
	marker  snapshotMarker
	st      snapshotStats
	bound   string // the applied version as a literal ("" before the first)
	upTo    string // the newest version key the run applies
	gen     time.Time
	key     string // the version key the view's bound moves to ("" keeps it)
	outcome string
}

type snapshotMarker struct {
	version   string // the applied version key, as text
	gen       time.Time
	newestGen time.Time
	found     bool
}

type snapshotStats struct {
	total, events, versions, keys, processed int64
	newest                                   string // the newest version key read, as text ("" if none)
	older                                    string // the newest version key below newest ("" if none)
}

func (s *snapshotRun) read(ctx context.Context) (bool, error) {
	b := s.t.b
	s.plan = s.t.p.SnapshotCompaction()
	if err := s.readMarker(ctx); err != nil {
		return false, err
	}
	s.key = s.marker.version
	if s.marker.found {
		var err error
		if s.bound, err = render.VersionBound(b, s.marker.version); err != nil {
			return false, err
		}
		s.rep.AppliedVersion = s.bound
	}
	if err := s.readStats(ctx); err != nil {
		return false, err
	}
	s.rep.EventsRead, s.rep.KeysTouched = s.st.events, s.st.keys
	s.rep.RowsSkipped = max(0, s.st.total-s.st.processed-s.st.events)
	// The run applies the versions the statistics saw, up to upTo: a
	// version loaded meanwhile waits for the next run, where it is counted
	// and applied whole. While the table is still being written, the newest
	// version may be incomplete: it waits too.
	s.upTo = s.st.newest
	if s.st.events > 0 && s.c.opts.SnapshotSettle > 0 && s.now.Sub(s.t.changelog.LastModifiedTime) < s.c.opts.SnapshotSettle {
		s.upTo = s.st.older
		if s.upTo == "" {
			// Nothing settled to apply. The signature is not recorded as
			// clean: the next run must look again even if the table is
			// unchanged by then.
			s.rep.Outcome = Settling
			return false, nil
		}
	}
	if s.st.events == 0 {
		s.rep.Outcome, s.rep.WatermarkAfter = UpToDate, s.now
		return false, nil
	}
	s.gen = generation(s.now, s.marker.newestGen)
	return true, nil
}

func (s *snapshotRun) readMarker(ctx context.Context) error {
	row, err := s.markerRow(ctx, s.plan.Marker, "the applied version")
	if err != nil {
		return err
	}
	s.marker = snapshotMarker{gen: render.Epoch, newestGen: render.Epoch}
	v, ok := row[render.OutAppliedVersion].(string)
	if !ok {
		return nil // no marker, or one of an empty first snapshot (no version)
	}
	s.marker.version, s.marker.found = v, true
	s.marker.gen = ts(row[catalog.ColStateGen], render.Epoch)
	s.marker.newestGen = ts(row[render.OutNewestGen], s.marker.gen)
	return nil
}

func (s *snapshotRun) readStats(ctx context.Context) error {
	sql, err := s.plan.Stats(s.bound)
	if err != nil {
		return err
	}
	r, err := s.c.stats(ctx, sql, s.acct, "what to apply")
	if err != nil {
		return err
	}
	s.st = snapshotStats{total: r.n(render.OutTotalRows), events: r.n(render.OutEvents), versions: r.n(render.OutVersions),
		keys: r.n(render.OutKeys), processed: r.n(render.OutProcessedRows)}
	s.st.newest, _ = r[render.OutNewestVersion].(string)
	s.st.older, _ = r[render.OutOlderVersion].(string)
	return nil
}

func (s *snapshotRun) fold(ctx context.Context) error {
	sql, err := s.plan.Fold(s.bound, s.upTo, s.gen)
	if err != nil {
		return err
	}
	res, err := s.c.exec(ctx, StepFold, sql, s.acct)
	if err != nil {
		return fmt.Errorf("applying %d snapshots: %w", s.st.versions, err)
	}
	s.rep.Generation, s.rep.WatermarkAfter, s.rep.RowsWritten = s.gen, s.now, res.RowsAffected
	if s.rep.AppliedVersion, err = render.VersionBound(s.t.b, s.upTo); err != nil {
		return err
	}
	s.key = s.upTo
	return nil
}

func (s *snapshotRun) after(ctx context.Context) error {
	if s.rep.Outcome != Compacted {
		return nil
	}
	sql, err := s.plan.GC(s.gen)
	if err != nil {
		return err
	}
	if _, err := s.c.exec(ctx, StepGC, sql, s.acct); err != nil {
		return fmt.Errorf("deleting rows no view reads: %w", err)
	}
	return s.step(StepGC)
}

// view moves the view's constant bound to the version now applied (or
// keeps the view's: an idle run read no marker).
func (s *snapshotRun) view(ctx context.Context) error {
	return s.viewOnce("version:"+s.key, func() error {
		if err := s.c.objs.SnapshotView(ctx, s.t.b, s.key); err != nil {
			return fmt.Errorf("updating the view (version bound %q): %w", s.key, err)
		}
		return nil
	})
}

// next: the statistics read the table after its metadata was, so every row
// the signature reflects is read, and a run that leaves nothing to apply
// leaves the signature clean; a run that leaves newer versions waiting
// (settling) leaves the labels as they were.
func (s *snapshotRun) next() (labels, bool) {
	if s.rep.Outcome == Settling || (s.rep.Outcome == Compacted && s.upTo != s.st.newest) {
		return labels{}, false
	}
	return labels{known: true, sig: signature(s.t.changelog), sigSeen: s.now, checked: s.now, watermark: s.now, foldedMax: s.now, clean: true}, true
}
