package compact

import (
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/config"
)

// Configured is the one mapping of a configuration to options: every
// compaction setting of config.Config reaches Options, as the compact
// function and bqcdc compact both map them (issue 39).
func TestConfigured(t *testing.T) {
	cfg := config.Config{VisibilityLag: 3 * time.Minute, TombstoneRetentionDays: 2, ChangelogRetentionDays: 5,
		CompactConcurrency: 7, CompactBudget: 11 * time.Minute, AppendLedger: true, ChangeFeedEvery: time.Hour,
		SnapshotSettle: -1, MaintainEvery: 12 * time.Hour}
	got := Configured(cfg)
	want := Options{VisibilityLag: 3 * time.Minute, TombstoneRetention: 48 * time.Hour, ChangelogRetention: 120 * time.Hour,
		Concurrency: 7, Budget: 11 * time.Minute, Ledger: true, ChangeFeedEvery: time.Hour, SnapshotSettle: -1, MaintainEvery: 12 * time.Hour}
	if got.VisibilityLag != want.VisibilityLag || got.TombstoneRetention != want.TombstoneRetention || got.ChangelogRetention != want.ChangelogRetention ||
		got.Concurrency != want.Concurrency || got.Budget != want.Budget || got.Ledger != want.Ledger || got.ChangeFeedEvery != want.ChangeFeedEvery ||
		got.SnapshotSettle != want.SnapshotSettle || got.MaintainEvery != want.MaintainEvery {
		t.Errorf("Configured = %+v, want %+v", got, want)
	}
}
