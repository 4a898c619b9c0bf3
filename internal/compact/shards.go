package compact

import "fmt"

// MaxShards bounds how many shards the sources may be split into: the
// Terraform module allows at most 100 (one Cloud Scheduler job each), and
// ShardOf reduces a 32-bit hash modulo the count, which is only a shard of
// that count while the count fits in the hash (2^32 would divide by zero).
const MaxShards = 100

// ValidShards checks a shard selection (shard of shards) as the compact
// function's ?shard=i&shards=n and `bqcdc compact --shard --shards` give
// it: 1 <= shards <= MaxShards and 0 <= shard < shards.
func ValidShards(shard, shards int) error {
	if shards < 1 || shards > MaxShards {
		return fmt.Errorf("shards %d: want 1 to %d", shards, MaxShards)
	}
	if shard < 0 || shard >= shards {
		return fmt.Errorf("shard %d of %d shards: want 0 <= shard < shards", shard, shards)
	}
	return nil
}
