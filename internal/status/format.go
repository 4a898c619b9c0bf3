package status

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Write renders r as the tables `bqcdc status` prints: flows, sources, the
// last day's dead letters, and the problems found by Check.
func Write(w io.Writer, r Report) error {
	fmt.Fprintf(w, "bqcdc status of %s.%s at %s\n\n", r.Project, r.Dataset, r.At.Format("2006-01-02 15:04:05Z"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tSOURCE\tNEWEST CHANGE\tLAG\tAPPENDED\tTAIL\tLAST COMPACTION\tEVENTS\tJOBS\tBILLED\tFOLDED\tDEAD 1D")
	for _, f := range r.Flows {
		lag := "-"
		if f.LagSeconds >= 0 {
			lag = Age(time.Duration(f.LagSeconds) * time.Second)
		}
		run, events, jobs, billed := "none", "-", "-", "-"
		if f.LastRun != nil {
			run = fmt.Sprintf("%s %s ago", f.LastRun.Outcome, Age(r.At.Sub(f.LastRun.At)))
			events, jobs, billed = fmt.Sprint(f.LastRun.Events), fmt.Sprint(f.LastRun.Jobs), Bytes(f.LastRun.BytesBilled)
			if f.LastRun.FeedHeld != "" {
				run += " (change feed held)"
			}
		}
		tail, dead := fmt.Sprint(f.TailRows), fmt.Sprint(f.DeadLetters)
		if f.Kind == "snapshot" {
			// No changelog: what matters is the version applied and the
			// rows of snapshots loaded too late to apply.
			tail, dead = "-", "-"
			if f.LastRun != nil && f.LastRun.AppliedVersion != "" {
				run += fmt.Sprintf(" (at %s, %d rows skipped)", f.LastRun.AppliedVersion, f.LastRun.RowsSkipped)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Flow, f.Source, clock(f.NewestSourceTS), lag, ago(r.At, f.LastIngestedAt),
			tail, run, events, jobs, billed, ago(r.At, f.LastCompactedAt), dead)
	}
	if len(r.Golds) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "MATERIALIZED VIEW\tREADS\tEXACT NOW\tREFRESHED (<view>_refreshed)")
		for _, g := range r.Golds {
			refreshed := "no (not kept by compaction)"
			switch {
			case g.Refreshed && g.RefreshedTo.IsZero():
				refreshed = "not yet refreshed by compaction"
			case g.Refreshed:
				refreshed = fmt.Sprintf("to %s (%s ago)", clock(g.RefreshedTo), Age(r.At.Sub(g.RefreshedTo)))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.View, g.Source, "yes", refreshed)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SOURCE\tCHANGELOG\tROWS\tSIZE\tSTREAMING\tLAST APPEND")
	for _, s := range r.Sources {
		if s.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Source, s.Table, s.Error)
			continue
		}
		last := "-"
		if !s.LastAppend.IsZero() {
			last = fmt.Sprintf("%s (%s ago)", clock(s.LastAppend), Age(r.At.Sub(s.LastAppend)))
		}
		if s.Listed { // found by the listing: no sizes (bqcdc status --source shows them)
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%s\n", s.Source, s.Table, last)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", s.Source, s.Table, s.Rows, Bytes(s.Bytes), s.StreamingRows, last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(r.DeadLetters) == 0 {
		fmt.Fprintln(w, "dead letters in the last day: none")
	} else {
		fmt.Fprintln(w, "dead letters in the last day (bqcdc replay re-publishes them once fixed):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TOPIC\tSTAGE\tCOUNT\tREASON")
		for _, d := range r.DeadLetters {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", orUnknown(d.Topic), d.Stage, d.Count, shorten(d.Reason, 100))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "OK: nothing past the thresholds")
		return nil
	}
	fmt.Fprintf(w, "%d problem(s):\n", len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintln(w, "  "+p.String())
	}
	return nil
}

// ago is how long before now t was ("-" for never).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return Age(now.Sub(t)) + " ago"
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// Bytes renders a byte count in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
