package compact

import "testing"

func TestValidShards(t *testing.T) {
	for _, tc := range []struct {
		shard, shards int
		ok            bool
	}{
		{0, 1, true}, {99, 100, true}, {0, 100, true},
		{0, 0, false}, {0, 101, false}, {0, 1 << 32, false}, {1, 1<<32 + 1, false},
		{-1, 2, false}, {2, 2, false},
	} {
		if err := ValidShards(tc.shard, tc.shards); (err == nil) != tc.ok {
			t.Errorf("ValidShards(%d, %d) = %v, want ok %v", tc.shard, tc.shards, err, tc.ok)
		}
	}
}
