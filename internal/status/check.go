package status

import (
	"fmt"
	"time"
)

// Thresholds say when a status is a problem. A zero duration or a negative
// count leaves that check off.
type Thresholds struct {
	// MaxLag: the newest change a view shows is older than this (a quiet
	// source trips it too: set it per deployment, from the source's
	// heartbeat or change rate).
	MaxLag time.Duration
	// MaxTail: more changelog rows than this wait after a flow's watermark.
	MaxTail int64
	// MaxCompactionAge: a flow's last compaction run is older than this,
	// or there is none in the window.
	MaxCompactionAge time.Duration
	// MaxDeadLetters: a source dead-lettered more messages than this in the
	// last day (0: any dead letter is a problem).
	MaxDeadLetters int64
}

// Off is a Thresholds with every check off: only failed compactions, held
// change feeds and unreadable changelogs are problems.
var Off = Thresholds{MaxTail: -1, MaxDeadLetters: -1}

// Problem is one fact past a threshold.
type Problem struct {
	Flow   string `json:"flow,omitempty"`
	Source string `json:"source,omitempty"`
	Check  string `json:"check"` // lag, tail, compaction, change_feed, key_range, dead_letters, changelog
	Detail string `json:"detail"`
}

func (p Problem) String() string {
	who := p.Flow
	if who == "" {
		who = p.Source
	}
	return fmt.Sprintf("%s: %s: %s", who, p.Check, p.Detail)
}

// Check lists what in r is past th, flows first (in r's order), and stores
// the list in r.Problems. A flow whose last compaction failed or held its
// change feed is always a problem, as is a changelog whose metadata cannot
// be read.
func Check(r *Report, th Thresholds) []Problem {
	var out []Problem
	add := func(p Problem) { out = append(out, p) }
	for _, f := range r.Flows {
		// A snapshot flow has no change stream: no lag or tail to check
		// (a table loaded late shows as its compaction's skipped rows).
		if th.MaxLag > 0 && f.Kind != "snapshot" {
			switch {
			case f.LagSeconds < 0:
				add(Problem{Flow: f.Flow, Check: "lag", Detail: "no change ingested in the window"})
			case time.Duration(f.LagSeconds)*time.Second > th.MaxLag:
				add(Problem{Flow: f.Flow, Check: "lag", Detail: fmt.Sprintf("newest change %s old, more than %s", Age(time.Duration(f.LagSeconds)*time.Second), th.MaxLag)})
			}
		}
		if th.MaxTail >= 0 && f.TailRows > th.MaxTail {
			add(Problem{Flow: f.Flow, Check: "tail", Detail: fmt.Sprintf("%d rows wait after the watermark, more than %d", f.TailRows, th.MaxTail)})
		}
		switch {
		case f.LastRun != nil && f.LastRun.Outcome == "failed":
			add(Problem{Flow: f.Flow, Check: "compaction", Detail: "last run failed: " + f.LastRun.Error})
		case th.MaxCompactionAge > 0 && f.LastRun == nil:
			add(Problem{Flow: f.Flow, Check: "compaction", Detail: "no run in the window"})
		case th.MaxCompactionAge > 0 && r.At.Sub(f.LastRun.At) > th.MaxCompactionAge:
			add(Problem{Flow: f.Flow, Check: "compaction", Detail: fmt.Sprintf("last run %s ago, more than %s", Age(r.At.Sub(f.LastRun.At)), th.MaxCompactionAge)})
		}
		// A held feed stays held until an operator acts: its readers see
		// no new changes, so it is a problem whatever the thresholds.
		if f.LastRun != nil && f.LastRun.FeedHeld != "" {
			add(Problem{Flow: f.Flow, Check: "change_feed", Detail: "held: " + f.LastRun.FeedHeld})
		}
		// Keys past a state's key range cost every run and lookup more
		// until the range is widened: a problem whatever the thresholds.
		if f.LastRun != nil && f.LastRun.KeysOutsideRange {
			add(Problem{Flow: f.Flow, Check: "key_range", Detail: "the last run touched keys outside the state's key range (bqcdc.state.key_range): widen it and run bqcdc apply"})
		}
	}
	perTopic := map[string]int64{}
	var topics []string
	for _, d := range r.DeadLetters {
		if _, seen := perTopic[d.Topic]; !seen {
			topics = append(topics, d.Topic)
		}
		perTopic[d.Topic] += d.Count
	}
	if th.MaxDeadLetters >= 0 {
		for _, t := range topics {
			if n := perTopic[t]; n > th.MaxDeadLetters {
				add(Problem{Source: orUnknown(t), Check: "dead_letters", Detail: fmt.Sprintf("%d in the last day, more than %d", n, th.MaxDeadLetters)})
			}
		}
	}
	for _, s := range r.Sources {
		if s.Error != "" {
			add(Problem{Source: s.Source, Check: "changelog", Detail: s.Error})
		}
	}
	r.Problems = out
	return out
}

func orUnknown(topic string) string {
	if topic == "" {
		return "(no topic)"
	}
	return topic
}

// Age renders a duration the way the status table does: 45s, 12m, 3h05m, 2d04h.
func Age(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Age(-d)
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}
