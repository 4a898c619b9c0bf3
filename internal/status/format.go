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
		fmt.Fprintln(tw, flowLine(r, f))
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
		fmt.Fprintln(tw, sourceLine(r, s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeFindings(w, r)
}

// flowLine is a flow's row of the status table (tab-separated).
func flowLine(r Report, f Flow) string {
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
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", f.Flow, f.Source, clock(f.NewestSourceTS), lag, ago(r.At, f.LastIngestedAt),
		tail, run, events, jobs, billed, ago(r.At, f.LastCompactedAt), dead)
}

// sourceLine is a source's row of the changelog table (tab-separated).
func sourceLine(r Report, s Source) string {
	if s.Error != "" {
		return fmt.Sprintf("%s\t%s\t%s", s.Source, s.Table, s.Error)
	}
	last := "-"
	if !s.LastAppend.IsZero() {
		last = fmt.Sprintf("%s (%s ago)", clock(s.LastAppend), Age(r.At.Sub(s.LastAppend)))
	}
	if s.Listed { // found by the listing: no sizes (bqcdc status --source shows them)
		return fmt.Sprintf("%s\t%s\t-\t-\t-\t%s", s.Source, s.Table, last)
	}
	return fmt.Sprintf("%s\t%s\t%d\t%s\t%d\t%s", s.Source, s.Table, s.Rows, Bytes(s.Bytes), s.StreamingRows, last)
}

// writeFindings writes the last day's dead letters and the problems.
func writeFindings(w io.Writer, r Report) error {
	fmt.Fprintln(w)
	if len(r.DeadLetters) == 0 {
		fmt.Fprintln(w, "dead letters in the last day: none")
	} else {
		fmt.Fprintln(w, "dead letters in the last day (bqcdc replay re-publishes them once fixed):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
