package main

import "testing"

// TestFlagSet: every command hands flagSet the flag set it parses, with its
// own flags (the docs test relies on it).
func TestFlagSet(t *testing.T) {
	want := map[string]string{"local": "once", "apply": "dead-letter-retention-days", "render": "out",
		"compact": "shards", "replay": "message-id", "status": "max-lag", "loadgen": "local"}
	for _, c := range commands {
		fs := flagSet(c.name)
		if fs == nil {
			t.Errorf("flagSet(%q) = nil", c.name)
			continue
		}
		if fs.Lookup(want[c.name]) == nil {
			t.Errorf("flagSet(%q) has no --%s", c.name, want[c.name])
		}
		if fs.Parsed() {
			t.Errorf("flagSet(%q) returned a parsed flag set", c.name)
		}
	}
	if flagSet("nope") != nil {
		t.Error(`flagSet("nope") != nil`)
	}
}
