package compact

import (
	"time"

	"github.com/bqcdc/bqcdc/internal/config"
)

// Configured maps a configuration to the options it sets: the one mapping
// the compact function (from its environment) and `bqcdc compact` (from
// its flags, which build a config.Config) both use, so neither can set a
// setting the other cannot. What a caller adds on top is its own: the
// clients it made (Lister, Reports, DryRun: a dry run is an operator's
// question, the function runs for real), the materialized views it
// loaded, its log and metrics.
func Configured(cfg config.Config) Options {
	return Options{
		VisibilityLag:      cfg.VisibilityLag,
		TombstoneRetention: time.Duration(cfg.TombstoneRetentionDays) * 24 * time.Hour,
		ChangelogRetention: time.Duration(cfg.ChangelogRetentionDays) * 24 * time.Hour,
		Concurrency:        cfg.CompactConcurrency,
		Budget:             cfg.CompactBudget,
		Ledger:             cfg.AppendLedger,
		ChangeFeedEvery:    cfg.ChangeFeedEvery,
		SnapshotSettle:     cfg.SnapshotSettle,
		MaintainEvery:      cfg.MaintainEvery,
	}
}
