package apply

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/flow"
)

// TestHorizonNotice: apply says what a new or shorter lateness horizon
// will drop, and nothing for a longer one, the same one or none at all.
// (TestLatenessHorizonDropsOldEvents checks the label's round trip.)
func TestHorizonNotice(t *testing.T) {
	if s := horizonNotice(&flow.Bound{Flow: &flow.Flow{Name: "f", Target: flow.Target{Table: "users"}}}, ""); s != "" {
		t.Errorf("a flow without a horizon has a notice: %q", s)
	}
	b := &flow.Bound{Flow: &flow.Flow{Name: "f", Target: flow.Target{Table: "users"}, LatenessHorizonDays: 7}}
	note := func(was string) string { return horizonNotice(b, was) }
	for was, want := range map[string]string{
		"":   "table users__state: lateness horizon 7 days (was none): from its next maintenance on, events ingested more than 7 days before its watermark that no view needs are dropped from the state for good (bqcdc.lateness_horizon_days)",
		"x":  "(was none)", // not a label apply writes: read as none
		"30": "lateness horizon 7 days (was 30 days)",
		"7":  "",
		"1":  "",
	} {
		got := note(was)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("labelled %q: notice %q, want %q", was, got, want)
		}
	}
}
