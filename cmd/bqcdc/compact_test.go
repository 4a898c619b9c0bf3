package main

import (
	"context"
	"flag"
	"strings"
	"testing"
)

// The CLI refuses the shard counts the compact function refuses, before it
// opens any client.
func TestCompactRefusesShards(t *testing.T) {
	for _, args := range [][]string{
		{"--shards", "4294967296"}, {"--shards", "101"}, {"--shards", "0"},
		{"--shard", "2", "--shards", "2"}, {"--shard", "-1", "--shards", "2"},
	} {
		err := runCompact(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), "--shard ") || !strings.Contains(err.Error(), "want ") {
			t.Errorf("%v: %v, want the shard bound named", args, err)
		}
	}
}

// The CLI refuses the settings the compact function's configuration
// refuses, naming the flag, before it opens any client.
func TestCompactRefusesUnsafeSettings(t *testing.T) {
	for _, args := range [][]string{
		{"--visibility-lag", "0s"}, {"--tombstone-retention-days", "106752"}, {"--changelog-retention-days", "-1"},
		{"--concurrency", "1000000"}, {"--concurrency", "0"},
	} {
		err := runCompact(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), args[0]+" ") {
			t.Errorf("%v: %v, want the flag named", args, err)
		}
	}
}

// A flow named twice is compacted once.
func TestCompactFlowNamesOnce(t *testing.T) {
	var only names
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.Var(&only, "flow", "")
	if err := fs.Parse([]string{"--flow", "a", "--flow", "b", "--flow", "a"}); err != nil {
		t.Fatal(err)
	}
	if got := only.String(); got != "a,b" {
		t.Errorf("flows %q, want a,b", got)
	}
}
