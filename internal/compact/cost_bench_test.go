package compact

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cost"
	"github.com/bqcdc/bqcdc/internal/dev/benchsize"
	"github.com/bqcdc/bqcdc/internal/dev/rendercases"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/sql/render"
)

// BenchmarkCompactionCost prices a compaction run of an SCD 1, SCD 2 and
// bitemporal flow with the cost model (internal/cost): it renders the
// statements a run executes with the real renderer, estimates what
// BigQuery on-demand billing would charge for each over a synthetic model
// of the flow's tables, and reports
//
//   - state-bytes/run: bytes of the state table the run's statements scan
//     (statistics, fold, change feed), before the 10 MB minimum;
//   - changelog-bytes/run: likewise of the changelog;
//   - billed-bytes/run: what the run is billed (each table read at least 10
//     MB, each statement rounded up to a whole MB);
//   - rows-written/run: the fold's level rows plus the change rows, from
//     the synthetic delta (every touched key has one new event that
//     changes its values): SCD 1 writes the key's newest event and a
//     marker, and per key an update's pre- and post-image and a marker; SCD
//     2 writes the event and a marker, and per key the closed version's
//     pre- and post-image, the new version's insert and a marker;
//     bitemporal writes the event and a marker (it has no change feed);
//   - maintenance-bytes/day: what the daily maintenance (fold the levels
//     into one, delete what it folded) is billed.
//
// It runs no query: go test ./internal/compact -run '^$' -bench CompactionCost.
func BenchmarkCompactionCost(b *testing.B) {
	flows := costFlows(b)
	for _, kind := range []string{"scd1", "scd2", "bitemporal"} {
		// 1 % of the keys touched, then a fixed delta of 100 keys at 10x,
		// 100x and 1000x the state (keys10k/touched100 is both): past
		// touched keys x block size, the change feed's read of the touched
		// keys' blocks levels off.
		for _, sz := range []struct{ keys, touched int }{{10_000, 100}, {100_000, 1_000}, {100_000, 100}, {1_000_000, 100}, {10_000_000, 100}} {
			b.Run(fmt.Sprintf("%s/keys%dk/touched%d", kind, sz.keys/1000, sz.touched), func(b *testing.B) {
				benchRun(b, flows[kind], sz.keys, sz.touched)
			})
		}
	}
	// The block axis (issue 40): the figures above assume 1 MiB blocks,
	// each perfectly sorted by the first key; BigQuery documents neither.
	// The same run at 1, 16, 64 and 256 MiB blocks, 1M and 10M keys, 1 to
	// 10,000 touched keys, shows what the state read depends on: past
	// touched keys x block size the whole state, and past render.KeyRanges
	// touched keys the key filter's ranges cover the whole key range.
	for _, kind := range []string{"scd1", "scd2", "bitemporal"} {
		for _, keys := range benchsize.Pick([]int{1_000_000, 10_000_000}, []int{1_000_000}, "") {
			for _, touched := range benchsize.Pick([]int{1, 100, 300, 1_000, 10_000}, []int{100, 300}, "") {
				for _, mib := range benchsize.Pick([]int64{1, 16, 64, 256}, []int64{1, 256}, "") {
					b.Run(fmt.Sprintf("%s/keys%dk/touched%d/block%dMiB", kind, keys/1000, touched, mib), func(b *testing.B) {
						benchRunBlocks(b, flows[kind], keys, touched, mib<<20)
					})
				}
			}
		}
	}
	// The same runs over states of buckets (flow.StateBucketsProperty, the
	// most a table may have: 9,998, the NULL partition and
	// __UNPARTITIONED__ beside them; written in ranges of at most 3,999
	// buckets a statement): the change feed reads the touched keys'
	// partitions, whatever the blocks. (A bitemporal flow keeps no change
	// feed, so its runs read no state and buckets are refused on it.)
	for _, kind := range []string{"scd1", "scd2"} {
		// The most buckets: an SCD 2 state's archive takes a second range
		// of partitions (render/archive.go), so half as many.
		n := flow.MaxStateBuckets
		if kind == "scd2" {
			n = flow.MaxStateBuckets / 2
		}
		bucketed := withBuckets(flows[kind], n)
		for _, keys := range benchsize.Pick([]int{1_000_000, 10_000_000}, []int{1_000_000}, "") {
			for _, touched := range benchsize.Pick([]int{1, 100, 300, 1_000, 10_000}, []int{100, 300}, "") {
				for _, mib := range benchsize.Pick([]int64{1, 16, 64, 256}, []int64{1, 256}, "") {
					b.Run(fmt.Sprintf("buckets/%s/keys%dk/touched%d/block%dMiB", kind, keys/1000, touched, mib), func(b *testing.B) {
						benchRunBlocks(b, bucketed, keys, touched, mib<<20)
					})
				}
			}
		}
		for _, events := range []int{10, 100} {
			if kind != "scd2" {
				break
			}
			for _, mib := range benchsize.Pick([]int64{1, 16, 64, 256}, []int64{1, 256}, "") {
				b.Run(fmt.Sprintf("buckets/history/scd2/keys1000k/touched100/events%dperkey/block%dMiB", events, mib), func(b *testing.B) {
					benchRunHistory(b, bucketed, 1_000_000, 100, events, mib<<20)
				})
				b.Run(fmt.Sprintf("buckets/history-unarchived/scd2/keys1000k/touched100/events%dperkey/block%dMiB", events, mib), func(b *testing.B) {
					benchRunWith(b, bucketed, 1_000_000, 100, costRun{eventsPerKey: events, blockBytes: mib << 20, noArchive: true})
				})
				b.Run(fmt.Sprintf("buckets/history-late10/scd2/keys1000k/touched100/events%dperkey/block%dMiB", events, mib), func(b *testing.B) {
					benchRunWith(b, bucketed, 1_000_000, 100, costRun{eventsPerKey: events, blockBytes: mib << 20, late: 10})
				})
			}
		}
	}
	// The same runs over states partitioned by ranges of the key
	// (flow.StateKeyRangeProperty, 9,998 ranges of the model's keys,
	// written in statements of at most 3,998): the change feed's key
	// filter is a filter on the partitioning column.
	// An SCD 2 state so partitioned keeps no archive (render.Archives).
	for _, kind := range []string{"scd1", "scd2"} {
		for _, keys := range benchsize.Pick([]int{1_000_000, 10_000_000}, []int{1_000_000}, "") {
			ranged := withKeyRange(flows[kind], keys)
			for _, touched := range benchsize.Pick([]int{1, 100, 300, 1_000, 10_000}, []int{100, 300}, "") {
				for _, mib := range benchsize.Pick([]int64{1, 16, 64, 256}, []int64{1, 256}, "") {
					b.Run(fmt.Sprintf("ranges/%s/keys%dk/touched%d/block%dMiB", kind, keys/1000, touched, mib), func(b *testing.B) {
						benchRunBlocks(b, ranged, keys, touched, mib<<20)
					})
				}
			}
		}
		for _, events := range []int{10, 100} {
			if kind != "scd2" {
				break
			}
			for _, mib := range benchsize.Pick([]int64{1, 16, 64, 256}, []int64{1, 256}, "") {
				b.Run(fmt.Sprintf("ranges/history/scd2/keys1000k/touched100/events%dperkey/block%dMiB", events, mib), func(b *testing.B) {
					benchRunHistory(b, withKeyRange(flows[kind], 1_000_000), 1_000_000, 100, events, mib<<20)
				})
			}
		}
	}
	// History x10 at the same live keys and touched keys (issue 40: an SCD
	// 2 feed is to read a touched key's previous version, not its
	// history): 10 and 100 events per key, at each block size.
	for _, keys := range benchsize.Pick([]int{1_000_000}, []int{100_000}, "") {
		for _, events := range []int{10, 100} {
			for _, mib := range benchsize.Pick([]int64{1, 16, 64, 256}, []int64{1, 256}, "") {
				b.Run(fmt.Sprintf("history/scd2/keys%dk/touched100/events%dperkey/block%dMiB", keys/1000, events, mib), func(b *testing.B) {
					benchRunHistory(b, flows["scd2"], keys, 100, events, mib<<20)
				})
				// Before the archive: every event in one level.
				b.Run(fmt.Sprintf("history-unarchived/scd2/keys%dk/touched100/events%dperkey/block%dMiB", keys/1000, events, mib), func(b *testing.B) {
					benchRunWith(b, flows["scd2"], keys, 100, costRun{eventsPerKey: events, blockBytes: mib << 20, noArchive: true})
				})
				// One touched key in ten late: its archive is read too.
				b.Run(fmt.Sprintf("history-late10/scd2/keys%dk/touched100/events%dperkey/block%dMiB", keys/1000, events, mib), func(b *testing.B) {
					benchRunWith(b, flows["scd2"], keys, 100, costRun{eventsPerKey: events, blockBytes: mib << 20, late: 10})
				})
			}
		}
	}
	// SCD 1 and SCD 2 flows with their change feed off (TBLPROPERTIES
	// ('delta.enableChangeDataFeed' = 'false')): a run reads no state.
	for _, kind := range []string{"scd1", "scd2"} {
		off := withFlow(flows[kind], func(f *flow.Flow) { f.NoChangeFeed = true })
		for _, keys := range []int{10_000, 1_000_000, 10_000_000} {
			b.Run(fmt.Sprintf("%s-nofeed/keys%dk/touched100", kind, keys/1000), func(b *testing.B) {
				benchRun(b, off, keys, 100)
			})
		}
	}
	// A materialized view's refresh (gold): a fixed delta of 100 touched
	// keys of a source of 1M keys, at 10k, 100k and 1M groups of the view's
	// state, with the touched groups' filter the run reads first (past
	// Options.GoldTouchedAbove) and without it.
	// Two spreads of the touched groups: "recent", a window over a time
	// that an update keeps (an order's date: the pre-image's window is the
	// post-image's), and "scattered", a window over the time of the row's
	// last change, whose pre-images fall anywhere in the history.
	for _, groups := range []int{10_000, 100_000, 1_000_000} {
		for _, spread := range []string{"recent", "scattered", "unfiltered"} {
			b.Run(fmt.Sprintf("gold/groups%dk/touched100/%s", groups/1000, spread), func(b *testing.B) {
				benchGold(b, flows["scd1"], 1_000_000, 100, groups, spread)
			})
		}
	}
	// A quiet view: a run touching one key (its maintenance waits for
	// Options.GoldMaintainGrowth, which few versions a run reach late).
	b.Run("gold/groups1000k/touched1/recent", func(b *testing.B) {
		benchGold(b, flows["scd1"], 1_000_000, 1, 1_000_000, "recent")
	})
	// A view's read side: the whole view, and a query of it filtered by
	// one key (a lookup), at 10k, 100k and 1M keys of state.
	for _, kind := range []string{"scd1", "scd1-truncate", "scd2", "bitemporal"} {
		for _, keys := range []int{10_000, 100_000, 1_000_000} {
			b.Run(fmt.Sprintf("lookup/%s/keys%dk", kind, keys/1000), func(b *testing.B) {
				benchLookup(b, flows[kind], keys)
			})
		}
	}
	// The same over states of buckets: a lookup by key reads every
	// partition (the bucket is not derived from a filter on the key).
	for _, kind := range []string{"scd1", "scd2"} {
		for _, keys := range []int{100_000, 1_000_000} {
			b.Run(fmt.Sprintf("buckets/lookup/%s/keys%dk", kind, keys/1000), func(b *testing.B) {
				benchLookup(b, withBuckets(flows[kind], flow.MaxStateBuckets), keys)
			})
		}
	}
	// A lookup by key at each block size, over the three layouts: by
	// generation (the key's blocks), of buckets (every partition's blocks
	// of the key's range: each bucket spans every key), by key range (the
	// key's partition).
	for _, kind := range []string{"scd1", "scd2", "bitemporal"} {
		for _, keys := range benchsize.Pick([]int{1_000_000, 10_000_000}, []int{1_000_000}, "") {
			for _, mib := range benchsize.Pick([]int64{1, 16, 64, 256}, []int64{1, 256}, "") {
				layouts := []struct {
					name string
					bd   *flow.Bound
				}{{"generation", flows[kind]}, {"buckets", withBuckets(flows[kind], flow.MaxStateBuckets)}, {"ranges", withKeyRange(flows[kind], keys)}}
				for _, l := range layouts {
					if l.name == "buckets" && kind == "bitemporal" {
						continue // refused: no change feed
					}
					b.Run(fmt.Sprintf("lookup-blocks/%s/%s/keys%dk/block%dMiB", l.name, kind, keys/1000, mib), func(b *testing.B) {
						benchLookupBlocks(b, l.bd, keys, mib<<20)
					})
				}
			}
		}
	}
	// A time-travel lookup: <target>_at(ts) (its body as a query: the
	// model does not expand table function calls) filtered by one key.
	for _, kind := range []string{"scd1", "scd2"} {
		for _, keys := range []int{100_000, 1_000_000} {
			b.Run(fmt.Sprintf("lookup-at/%s/keys%dk", kind, keys/1000), func(b *testing.B) {
				benchLookupAt(b, flows[kind], keys)
			})
		}
	}
	// An SCD 1 flow that keeps a history (TBLPROPERTIES ('bqcdc.history' =
	// 'true'): render/history.go): its time travel, and what the history
	// costs the view, a lookup and a run (the generation column they read
	// to leave it out).
	history := withFlow(flows["scd1"], func(f *flow.Flow) { f.History = true })
	for _, keys := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("lookup-at/scd1-history/keys%dk", keys/1000), func(b *testing.B) {
			benchLookupAt(b, history, keys)
		})
		b.Run(fmt.Sprintf("lookup/scd1-history/keys%dk", keys/1000), func(b *testing.B) {
			benchLookup(b, history, keys)
		})
	}
	for _, mib := range benchsize.Pick([]int64{1, 64}, []int64{1}, "") {
		b.Run(fmt.Sprintf("scd1-history/keys1000k/touched100/block%dMiB", mib), func(b *testing.B) {
			benchRunBlocks(b, history, 1_000_000, 100, mib<<20)
		})
	}
	// The change feed's read side: <target>_changes(from, NULL) with from a
	// few minutes before the end, at 30 and 300 days of history.
	for _, kind := range []string{"scd1", "scd2"} {
		for _, days := range []int{30, 300} {
			b.Run(fmt.Sprintf("changefeed/%s/history%dd", kind, days), func(b *testing.B) {
				benchFeedRead(b, flows[kind], days)
			})
		}
	}
}

const (
	costHistoryDays  = 30
	costEventsPerKey = 10 // history: each key's events over costHistoryDays (SCD 2 and bitemporal state keeps them all)
	costSchedule     = 10 * time.Minute
)

var (
	costNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	costLoc = catalog.Location{Project: "p", DefaultDataset: "cdc"}
	// Average value sizes of the columns (by name); others are shaped
	// costShape: 10-byte strings, 2-element arrays.
	costShapes = map[string]cost.Shape{
		catalog.ColSequence:       {Len: 67}, // four 16-digit hex sections and separators
		catalog.ColMessageID:      {Len: 16},
		catalog.ColOp:             {Len: 1},
		catalog.ColTransaction:    {Null: 1},
		catalog.ColStateKey:       {Len: 14}, // {"userId":12345}
		catalog.ColStateOp:        {Len: 1},
		catalog.ColStateWatermark: {Null: 1}, // set on markers only
		catalog.ColStateBase:      {Null: 1}, // set on sparse rows only (none but in BenchmarkViewCost)
		catalog.ColChangeType:     {Len: 14},
		catalog.ColChangeID:       {Len: 6},
		"operation":               {Len: 6},
		"tags":                    {Len: 6, Elems: 2},
		catalog.ColPublishTime:    {},
		catalog.ColSourceTS:       {},
		catalog.ColIngestedAt:     {},
		catalog.ColCommitPosition: {},
		catalog.ColStateGen:       {},
		catalog.StartAt:           {},
		catalog.EndAt:             {},
		"sequenceNum":             {},
		"userId":                  {},
		catalog.ColSchemaID:       {},
		"name":                    {Len: 10},
		"city":                    {Len: 10},
	}
	costShape = cost.Shape{Len: 10, Elems: 2}
)

// costFlows binds sql/render's test flows users_scd1, users_scd2 and
// users_bitemporal over the users changelog (rendercases).
func costFlows(b *testing.B) map[string]*flow.Bound {
	b.Helper()
	out := map[string]*flow.Bound{}
	for _, bd := range rendercases.Flows(b, "../../sql/render/testdata") {
		if kind, ok := map[string]string{"users_scd1": "scd1", "users_scd1_truncate": "scd1-truncate", "users_scd2": "scd2", "users_bitemporal": "bitemporal"}[bd.Name]; ok {
			out[kind] = bd
		}
	}
	if len(out) != 4 {
		b.Fatalf("found %d of the 4 flows", len(out))
	}
	return out
}

// costRun is one run: the 10 minutes of changes before now, folded from
// the previous run's watermark.
type costRun struct {
	params  render.Run
	touched []int64 // sorted
	// blockBytes is the size of the tables' blocks (0:
	// cost.DefaultBlockBytes), each perfectly sorted by its clustering
	// column: BigQuery documents neither, so the block axis shows how the
	// figures depend on them (issue 40).
	blockBytes int64
	// eventsPerKey is each key's history (0: costEventsPerKey).
	eventsPerKey int
	// noArchive: the state of an SCD 2 flow with a change feed as before
	// the archive (every event in one level), for comparison; late: of
	// the touched keys, those with an event folded before their last
	// version's first since the archive was written (their archive is
	// read too).
	noArchive bool
	late      int
}

// events is the history's events per key.
func (r costRun) events() int {
	if r.eventsPerKey > 0 {
		return r.eventsPerKey
	}
	return costEventsPerKey
}

func newCostRun(keys, touched int) costRun {
	lag := 10 * time.Second
	from := costNow.Add(-costSchedule - lag)
	r := costRun{params: render.Run{Watermark: from, FoldedMax: from, Generation: costNow, NewWatermark: costNow.Add(-lag),
		TombstoneCutoff: render.Epoch, Cutoff: costNow.Add(-DefaultMaintainMargin).Truncate(24 * time.Hour), ChangesFrom: from}}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[int64]bool{}
	for len(r.touched) < touched {
		k := rng.Int64N(int64(keys))
		if !seen[k] {
			seen[k] = true
			r.touched = append(r.touched, k)
		}
	}
	slices.Sort(r.touched)
	return r
}

// withBuckets is bd with a state of n buckets.
func withBuckets(bd *flow.Bound, n int) *flow.Bound {
	return withFlow(bd, func(f *flow.Flow) { f.StateBuckets = n })
}

// withKeyRange is bd with a state partitioned by ranges of its first key
// from 0 to keys (the model's keys): at most flow.MaxKeyRangePartitions
// ranges.
func withKeyRange(bd *flow.Bound, keys int) *flow.Bound {
	return withFlow(bd, func(f *flow.Flow) { f.StateKeyRange = &flow.KeyRange{Start: 0, End: int64(keys)} })
}

// withFlow is bd with a copy of its flow that edit changed.
func withFlow(bd *flow.Bound, edit func(*flow.Flow)) *flow.Bound {
	out := *bd
	f := *bd.Flow
	edit(&f)
	out.Flow = &f
	return &out
}

// costBucket is the model's bucket of key k in a state of n buckets: a
// hash (SplitMix64's finalizer) modulo n, spread as FarmHash's is.
func costBucket(k int64, n int) int64 {
	z := uint64(k) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) % uint64(n))
}

// keyFilter is the touched keys as the statistics return them: NTILE of
// the distinct first-key values into at most render.KeyRanges tiles, each
// tile's min and max, and (a state of buckets) their buckets.
func (r costRun) keyFilter(bd *flow.Bound) *render.KeyFilter {
	n := len(r.touched)
	tiles := min(n, render.KeyRanges)
	f := &render.KeyFilter{}
	at := 0
	for i := range tiles {
		size := n / tiles // NTILE: the first n % tiles tiles hold one more
		if i < n%tiles {
			size++
		}
		f.Lo = append(f.Lo, r.touched[at])
		f.Hi = append(f.Hi, r.touched[at+size-1])
		at += size
	}
	if n := bd.StateBuckets; n > 0 {
		seen := map[int64]bool{}
		f.Buckets = []int64{}
		for _, k := range r.touched {
			if bk := costBucket(k, n); !seen[bk] {
				seen[bk] = true
				f.Buckets = append(f.Buckets, bk)
			}
		}
	}
	if kr := bd.StateKeyRange; kr != nil {
		// The touched ranges (the statistics' buckets output), which
		// the fold is written in statements of.
		seen := map[int64]bool{}
		f.Buckets = []int64{}
		for _, k := range r.touched {
			if p, ok := kr.Partition(k); ok && !seen[p] {
				seen[p] = true
				f.Buckets = append(f.Buckets, p)
			}
		}
	}
	return f
}

// costModel is the flow's tables as a run finds them: the changelog (30
// days of history, costEventsPerKey events per key, plus the run's delta:
// one event per touched key), partitioned by day of _cdc_ingested_at and
// clustered by it; the state as maintenance leaves it (SCD 1 one deciding
// row per key, SCD 2 and bitemporal every event), clustered by the first
// key, and a marker; the change table (the history's changes, partitioned
// by day of _commit_position and clustered by it, and a day of markers).
func costModel(b *testing.B, bd *flow.Bound, keys int, r costRun) (m *cost.Model, changelog, state, changes *cost.Table) {
	b.Helper()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	from := costNow.AddDate(0, 0, -costHistoryDays)
	changelog = cost.NewTable(cost.Name(costLoc.ChangelogTable(bd.Flow)), cost.Columns(bd.Changelog, costShapes, costShape), catalog.ColIngestedAt, catalog.ColIngestedAt)
	must(changelog.AddTimeRange(from, r.params.Watermark, int64(keys*r.events()), r.blockBytes))
	must(changelog.AddTimeRange(r.params.Watermark.Add(time.Microsecond), r.params.NewWatermark, int64(len(r.touched)), r.blockBytes))

	perKey := int64(1)
	if bd.SCDType == 2 {
		perKey = int64(r.events())
	}
	if kr := bd.StateKeyRange; kr != nil {
		// A state partitioned by ranges of its first key: each range's
		// keys' rows in their partition, sorted by key, and the marker in
		// the NULL partition.
		state = cost.NewTable(cost.Name(costLoc.StateTable(bd.Flow)), cost.Columns(plan.For(bd, costLoc).StateColumns(), costShapes, costShape), bd.Keys[0].Name, bd.Keys[0].Name)
		state.Ranges, state.RangeStart = kr.Interval(), kr.Start
		must(state.AddSpan(cost.Partition{Null: true}, cost.Null, cost.Null, 1, r.blockBytes))
		for p := range kr.Partitions() {
			lo := max(kr.Start+p*kr.Interval(), 0)
			hi := min(kr.Start+(p+1)*kr.Interval(), int64(keys)) - 1
			if hi >= lo {
				must(state.AddSpan(cost.Partition{Day: p}, cost.Int(lo), cost.Int(hi), (hi-lo+1)*perKey, r.blockBytes))
			}
		}
	} else if n := bd.StateBuckets; n > 0 {
		// A state of buckets: a partition per bucket, holding its keys'
		// rows, sorted by key (spread over the whole key range), and the
		// marker in the NULL partition.
		state = cost.NewTable(cost.Name(costLoc.StateTable(bd.Flow)), cost.Columns(plan.For(bd, costLoc).StateColumns(), costShapes, costShape), catalog.ColStateBucket, bd.Keys[0].Name)
		must(state.AddSpan(cost.Partition{Null: true}, cost.Null, cost.Null, 1, r.blockBytes))
		count := make([]int64, n)
		for k := range int64(keys) {
			count[costBucket(k, n)]++
		}
		for bk, c := range count {
			if render.Archives(bd) && !r.noArchive {
				// Closed versions in the bucket's archive partition,
				// bucket + n (render/archive.go); each key's last event
				// in its bucket's.
				must(state.AddSpan(cost.Partition{Day: int64(bk)}, cost.Int(0), cost.Int(int64(keys-1)), c, r.blockBytes))
				must(state.AddSpan(cost.Partition{Day: int64(bk + n)}, cost.Int(0), cost.Int(int64(keys-1)), c*(perKey-1), r.blockBytes))
				continue
			}
			must(state.AddSpan(cost.Partition{Day: int64(bk)}, cost.Int(0), cost.Int(int64(keys-1)), c*perKey, r.blockBytes))
		}
	} else {
		// Partitioned by day of the generation; maintenance wrote it the day
		// before.
		state = cost.NewTable(cost.Name(costLoc.StateTable(bd.Flow)), cost.Columns(plan.For(bd, costLoc).StateColumns(), costShapes, costShape), catalog.ColStateGen, bd.Keys[0].Name)
		folded := cost.DayOf(costNow.AddDate(0, 0, -1))
		if render.Archives(bd) && !r.noArchive {
			// Closed versions in the archive's day (render/archive.go): the
			// model's keys change a tracked column at every event, so each
			// key's last version is its last event, in the level.
			open := int64(1)
			must(state.AddSpan(folded, cost.Null, cost.Null, 2, r.blockBytes)) // the markers: watermark, archive
			must(state.AddSpan(folded, cost.Int(0), cost.Int(int64(keys-1)), int64(keys)*open, r.blockBytes))
			archive := cost.DayOf(render.ArchiveSlot(costNow.AddDate(0, 0, -1), nil))
			must(state.AddSpan(archive, cost.Int(0), cost.Int(int64(keys-1)), int64(keys)*(perKey-open), r.blockBytes))
		} else {
			must(state.AddSpan(folded, cost.Null, cost.Null, 1, r.blockBytes)) // the marker
			must(state.AddSpan(folded, cost.Int(0), cost.Int(int64(keys-1)), int64(keys)*perKey, r.blockBytes))
		}
		if render.HistoryKept(bd) {
			// An SCD 1 flow's history (render/history.go): every event of
			// the changelog, in its months' partitions (the model's: one),
			// and the history marker.
			must(state.AddSpan(cost.DayOf(render.HistoryGen), cost.Null, cost.Null, 1, r.blockBytes))
			month := (costNow.Year()-2000)*12 + int(costNow.Month()) - 1
			must(state.AddSpan(cost.DayOf(render.HistoryGen.AddDate(0, 0, month)), cost.Int(0), cost.Int(int64(keys-1)), int64(keys*r.events()), r.blockBytes))
		}
	}
	m = cost.NewModel(changelog, state)

	if bd.ChangeFeed() {
		changes = cost.NewTable(cost.Name(costLoc.ChangesTable(bd.Flow)), cost.Columns(plan.For(bd, costLoc).ChangeColumns(), costShapes, costShape), catalog.ColCommitPosition, catalog.ColCommitPosition)
		must(changes.AddTimeRange(from, r.params.Watermark, int64(keys*r.events())*changeRowsPerEvent(bd), r.blockBytes))
		must(changes.AddSpan(cost.Partition{Null: true}, cost.Null, cost.Null, int64(24*time.Hour/costSchedule), r.blockBytes))
		m.Tables[changes.Name] = changes
	}
	return m, changelog, state, changes
}

// changeRowsPerEvent: an update of an existing key emits an SCD 1 target's
// pre- and post-image; an SCD 2 target's closed version's pre- and
// post-image and the new version's insert.
func changeRowsPerEvent(bd *flow.Bound) int64 {
	if bd.SCDType == 2 {
		return 3
	}
	return 2
}

func benchRun(b *testing.B, bd *flow.Bound, keys, touched int) {
	benchRunBlocks(b, bd, keys, touched, 0)
}

// benchRunBlocks is benchRun with blocks of blockBytes (0: the default).
func benchRunBlocks(b *testing.B, bd *flow.Bound, keys, touched int, blockBytes int64) {
	benchRunHistory(b, bd, keys, touched, 0, blockBytes)
}

// benchRunHistory is benchRunBlocks with eventsPerKey events of history per
// key (0: costEventsPerKey).
func benchRunHistory(b *testing.B, bd *flow.Bound, keys, touched, eventsPerKey int, blockBytes int64) {
	benchRunWith(b, bd, keys, touched, costRun{eventsPerKey: eventsPerKey, blockBytes: blockBytes})
}

// benchRunWith is benchRun with the history, blocks, archive and late keys
// of opts.
func benchRunWith(b *testing.B, bd *flow.Bound, keys, touched int, opts costRun) {
	r := newCostRun(keys, touched)
	r.blockBytes, r.eventsPerKey, r.noArchive, r.late = opts.blockBytes, opts.eventsPerKey, opts.noArchive, opts.late
	if bd.ChangeFeed() {
		r.params.Slice = DefaultChangeSlice // as runs render the fold
	}
	m, changelog, state, _ := costModel(b, bd, keys, r)
	stmts := plan.For(bd, costLoc).Compaction()
	estimate := func(sql string, err error) *cost.Estimate {
		if err != nil {
			b.Fatal(err)
		}
		e, err := m.Estimate(sql)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	var stateBytes, changelogBytes, billed, maintenance int64
	for b.Loop() {
		stateBytes, changelogBytes, billed = 0, 0, 0
		stats := r.params
		stats.NewWatermark, stats.Generation = time.Time{}, time.Time{}
		keys := r.keyFilter(bd)
		run := []*cost.Estimate{estimate(stmts.Stats(stats))}
		// A state of buckets: the fold in ranges of at most
		// flow.BucketsPerJob touched buckets, as runs write it.
		for _, ch := range render.FoldChunks(render.ChunkedPartitions(bd), render.PerJob(bd, flow.BucketsPerJob), keys.Buckets) {
			p := r.params
			p.Chunk = ch
			run = append(run, estimate(stmts.Fold(p)))
		}
		if bd.ChangeFeed() {
			p := r.params
			p.Keys = keys
			if render.Archives(bd) && !r.noArchive && state.Bytes() > DefaultFeedKeysAbove {
				// The late keys first, then the feed over the levels (and
				// the late keys' archive); a small state is read whole, as
				// runs do (streamRun.archiveRead).
				run = append(run, estimate(stmts.Late(p)))
				p.Archived = &render.ArchiveRead{}
				if r.late > 0 {
					late := r.touched[:r.late]
					p.Archived.Late = &render.KeyFilter{}
					for _, k := range late {
						p.Archived.Late.Lo, p.Archived.Late.Hi = append(p.Archived.Late.Lo, k), append(p.Archived.Late.Hi, k)
						if n := bd.StateBuckets; n > 0 {
							p.Archived.Late.Buckets = append(p.Archived.Late.Buckets, costBucket(k, n))
						}
					}
				}
			}
			run = append(run, estimate(stmts.Changes(p)))
		}
		for _, e := range run {
			stateBytes += e.Scanned(state.Name)
			changelogBytes += e.Scanned(changelog.Name)
			billed += e.Billed
		}
		maintenance = 0
		for _, ch := range render.MaintainChunks(bd, flow.BucketsPerJob) {
			p := r.params
			p.Chunk = ch
			if render.Archives(bd) && !r.noArchive {
				p.Archive = render.ArchiveSlot(p.Generation, nil)
				if bd.StateBuckets == 0 {
					maintenance += estimate(stmts.ArchiveSlots()).Billed // the days the markers name (streamRun.archiveSlot)
				}
			}
			maintenance += estimate(stmts.Maintain(p)).Billed + estimate(stmts.MaintainGC(p)).Billed
		}
		if bd.SCDType == 2 {
			maintenance /= 7 // weekly: an SCD 2 state's levels are its distinct events already
		}
	}
	written := int64(touched) + 1 // the level: one event per touched key, and its marker
	if bd.ChangeFeed() {
		written += int64(touched)*changeRowsPerEvent(bd) + 1
	}
	b.ReportMetric(float64(stateBytes), "state-bytes/run")
	b.ReportMetric(float64(changelogBytes), "changelog-bytes/run")
	b.ReportMetric(float64(billed), "billed-bytes/run")
	b.ReportMetric(float64(written), "rows-written/run")
	b.ReportMetric(float64(maintenance), "maintenance-bytes/day")
	b.ReportMetric(float64(state.Bytes()), "state-bytes")
}

// benchLookup prices reading a flow's view as it stands after a run: the
// whole view, and the view filtered by one key (the filter reaches the
// state's scan through the view: internal/cost's pushdown), reporting
//
//   - state-bytes/read, state-bytes/lookup: bytes of the state scanned;
//   - billed-bytes/read, billed-bytes/lookup: what each query is billed
//     (the tail's changelog rows included, at least 10 MB a table).
func benchLookup(b *testing.B, bd *flow.Bound, keys int) {
	benchLookupBlocks(b, bd, keys, 0)
}

// benchLookupBlocks is benchLookup over blocks of blockBytes (0: the
// default); it also reports the state's bytes.
func benchLookupBlocks(b *testing.B, bd *flow.Bound, keys int, blockBytes int64) {
	r := newCostRun(keys, 1)
	r.blockBytes = blockBytes
	m, _, state, _ := costModel(b, bd, keys, r)
	sql, err := viewSQL(bd, costLoc, r.params.NewWatermark)
	if err != nil {
		b.Fatal(err)
	}
	view := cost.Name(costLoc.ViewTable(bd.Flow))
	m.Views[view] = sql
	key := catalog.QuoteIdent(bd.Keys[0].Name)
	var whole, lookup *cost.Estimate
	for b.Loop() {
		if whole, err = m.Estimate(fmt.Sprintf("SELECT * FROM `%s`", view)); err != nil {
			b.Fatal(err)
		}
		if lookup, err = m.Estimate(fmt.Sprintf("SELECT * FROM `%s` WHERE %s = %d", view, key, keys/2)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(whole.Scanned(state.Name)), "state-bytes/read")
	b.ReportMetric(float64(whole.Billed), "billed-bytes/read")
	b.ReportMetric(float64(lookup.Scanned(state.Name)), "state-bytes/lookup")
	b.ReportMetric(float64(lookup.Billed), "billed-bytes/lookup")
	if blockBytes > 0 {
		b.ReportMetric(float64(state.Bytes()), "state-bytes")
	}
}

// benchLookupAt prices <target>_at(ts) read whole and filtered by one key:
// what its body reads of the state and the changelog. Its pruning bound
// (a target of versions') is the oldest compaction leaves it: a
// watermark apply.FunctionsRefresh old.
func benchLookupAt(b *testing.B, bd *flow.Bound, keys int) {
	r := newCostRun(keys, 1)
	m, changelog, state, _ := costModel(b, bd, keys, r)
	body, err := plan.For(bd, costLoc).AtQuery(r.params.Watermark, r.params.Watermark.Add(-apply.FunctionsRefresh))
	if err != nil {
		b.Fatal(err)
	}
	key := catalog.QuoteIdent(bd.Keys[0].Name)
	var whole, lookup *cost.Estimate
	for b.Loop() {
		if whole, err = m.Estimate(fmt.Sprintf("SELECT * FROM (\n%s\n)", body)); err != nil {
			b.Fatal(err)
		}
		if lookup, err = m.Estimate(fmt.Sprintf("SELECT * FROM (\n%s\n) WHERE %s = %d", body, key, keys/2)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(whole.Scanned(state.Name)), "state-bytes/read")
	b.ReportMetric(float64(whole.Scanned(changelog.Name)), "changelog-bytes/read")
	b.ReportMetric(float64(lookup.Scanned(state.Name)), "state-bytes/lookup")
	b.ReportMetric(float64(lookup.Scanned(changelog.Name)), "changelog-bytes/lookup")
	b.ReportMetric(float64(lookup.Billed), "billed-bytes/lookup")
}

func benchFeedRead(b *testing.B, bd *flow.Bound, days int) {
	const keys = 100_000
	r := newCostRun(keys, 1)
	end := r.params.Watermark
	changes := cost.NewTable(cost.Name(costLoc.ChangesTable(bd.Flow)), cost.Columns(plan.For(bd, costLoc).ChangeColumns(), costShapes, costShape), catalog.ColCommitPosition, catalog.ColCommitPosition)
	// The same rate of change whatever the history's length.
	perDay := int64(keys*costEventsPerKey/costHistoryDays) * changeRowsPerEvent(bd)
	if err := changes.AddTimeRange(end.AddDate(0, 0, -days), end, perDay*int64(days), 0); err != nil {
		b.Fatal(err)
	}
	if err := changes.AddSpan(cost.Partition{Null: true}, cost.Null, cost.Null, int64(24*time.Hour/costSchedule), 0); err != nil {
		b.Fatal(err)
	}
	m := cost.NewModel(changes)
	var scanned, billed int64
	for b.Loop() {
		sql, err := plan.For(bd, costLoc).ChangesQuery(end.Add(-5*time.Minute), time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		e, err := m.Estimate(sql)
		if err != nil {
			b.Fatal(err)
		}
		scanned, billed = e.Scanned(changes.Name), e.Billed
	}
	b.ReportMetric(float64(scanned), "feed-bytes/read")
	b.ReportMetric(float64(billed), "billed-bytes/read")
	b.ReportMetric(float64(changes.Bytes()), "change-table-bytes")
}

// benchGold prices the refresh of a materialized view over an SCD 1 flow
// (sql/render/testdata's users_per_hour: COUNT, SUM, AVG, COUNTIF per city
// and hour of _cdc_ingested_at) after a run that touched keys. Its state
// holds a version per group, clustered by the window's start, the groups
// spread over the history's hours; the run's change rows touch the current
// hour (post-images) and, per touched key, the hour of its row before
// (pre-images): that hour too ("recent"), or anywhere in the history
// ("scattered", and "unfiltered", which reads every block, as a state
// under Options.GoldTouchedAbove does). The refresh reads the state's
// markers, the touched groups' blocks (by the literals of their window
// starts, as compaction writes them in after asking) and the change rows
// of the run's range, never the source's state. Reported: gold-state-bytes/run, change-bytes/run,
// source-state-bytes/run (0), billed-bytes/run, touched-windows/run; and
// gold-state-bytes (the whole state, which the refresh before versions
// read and rewrote every run), read-bytes/refreshed (a read of
// <name>_refreshed), maintain-bytes/day (the daily DELETE, billed for
// every column of the state), feed-bytes/read (<name>_changes of the last
// run's positions: the state's versions, whatever the range).
func benchGold(b *testing.B, bd *flow.Bound, keys, touched, groups int, spread string) {
	d, errs := flow.ParseDirAll("../../sql/render/testdata")
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	var g *flow.BoundGold
	for _, decl := range d.Golds {
		if decl.Name.Table == "users_per_hour" {
			var err error
			if g, err = flow.BindGold(decl, []*flow.Bound{bd}, costLoc.DefaultDataset); err != nil {
				b.Fatal(err)
			}
		}
	}
	if g == nil || g.Refreshable() != nil {
		b.Fatal("users_per_hour is not a refreshable materialized view of users_scd1")
	}
	r := newCostRun(keys, touched)
	m, _, state, changes := costModel(b, bd, keys, r)
	// The view's state: its columns as the renderer lays them out (the
	// group, its JSON, the window's bounds, the kind, position and
	// version, and INT64 partial sums).
	names, err := render.GoldStateColumns(g, costLoc)
	if err != nil {
		b.Fatal(err)
	}
	var goldCols schema.Columns
	shapes := maps.Clone(costShapes)
	shapes[catalog.ColGoldVersion] = cost.Shape{Len: 37} // 20 digits, "-", 16 hex digits
	shapes[catalog.ColStateWatermark] = cost.Shape{}
	for _, n := range names {
		c := schema.Column{Name: n, Type: schema.Int64}
		switch {
		case n == "__g0" || n == catalog.ColStateOp || n == catalog.ColGoldVersion:
			c.Type = schema.String
		case n == "__window_start" || n == "__window_end" || n == catalog.ColStateWatermark:
			c.Type = schema.Timestamp
		}
		goldCols = append(goldCols, c)
	}
	gold := cost.NewTable(cost.Name(costLoc.GoldState(g.Gold)), cost.Columns(goldCols, shapes, costShape), "", "__window_start")
	hours := int64(costHistoryDays * 24)
	first := costNow.AddDate(0, 0, -costHistoryDays).Truncate(time.Hour)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(gold.AddSpan(cost.Partition{}, cost.Null, cost.Null, 1, 0)) // the marker
	must(gold.AddSpan(cost.Partition{}, cost.Timestamp(first), cost.Timestamp(first.Add(time.Duration(hours-1)*time.Hour)), int64(groups), 0))
	m.Tables[gold.Name] = gold
	// The run's change rows: an update's two images per touched key.
	must(changes.AddTimeRange(r.params.Watermark.Add(time.Microsecond), r.params.NewWatermark, int64(touched)*changeRowsPerEvent(bd), 0))
	// The windows they touch: the current hour, and each touched key's
	// hour before.
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[time.Time]bool{r.params.NewWatermark.Truncate(time.Hour): true}
	if spread != "recent" {
		for range touched {
			seen[first.Add(time.Duration(rng.Int64N(hours))*time.Hour)] = true
		}
	}
	var windows []any
	for w := range seen {
		windows = append(windows, w)
	}
	slices.SortFunc(windows, func(a, b any) int { return a.(time.Time).Compare(b.(time.Time)) })
	filter, filtered := "", spread != "unfiltered"
	if filtered {
		if filter, err = render.GoldTouchedFilter(g, windows); err != nil {
			b.Fatal(err)
		}
	}
	var goldBytes, changeBytes, stateBytes, billed, readBytes, maintain, feedRead int64
	for b.Loop() {
		sql, err := plan.ForGold(g, costLoc).Refresh(render.GoldRange{From: r.params.Watermark, To: r.params.NewWatermark, Run: "bench", Touched: filter})
		if err != nil {
			b.Fatal(err)
		}
		e, err := m.Estimate(sql)
		if err != nil {
			b.Fatal(err)
		}
		goldBytes, changeBytes, stateBytes, billed = e.Scanned(gold.Name), e.Scanned(changes.Name), e.Scanned(state.Name), e.Billed
		if filtered {
			// The question before: the change rows only.
			sql, err := plan.ForGold(g, costLoc).Touched(r.params.Watermark, r.params.NewWatermark)
			if err != nil {
				b.Fatal(err)
			}
			if e, err = m.Estimate(sql); err != nil {
				b.Fatal(err)
			}
			if e.Scanned(gold.Name) != 0 || e.Scanned(state.Name) != 0 {
				b.Fatalf("the touched groups' query reads a state: %+v", e)
			}
			changeBytes += e.Scanned(changes.Name)
			billed += e.Billed
		}
		if sql, err = render.GoldRefreshedView(g, costLoc); err != nil {
			b.Fatal(err)
		}
		if e, err = m.Estimate(sql); err != nil {
			b.Fatal(err)
		}
		readBytes = e.Scanned(gold.Name)
		if sql, err = render.GoldMaintain(g, costLoc, costNow.Add(-DefaultGoldFeedRetention)); err != nil {
			b.Fatal(err)
		}
		if e, err = m.Estimate(sql); err != nil {
			b.Fatal(err)
		}
		maintain = e.Billed
		if sql, err = render.GoldChangesQuery(g, costLoc, r.params.Watermark, time.Time{}); err != nil {
			b.Fatal(err)
		}
		if e, err = m.Estimate(sql); err != nil {
			b.Fatal(err)
		}
		feedRead = e.Scanned(gold.Name)
	}
	b.ReportMetric(float64(goldBytes), "gold-state-bytes/run")
	b.ReportMetric(float64(changeBytes), "change-bytes/run")
	b.ReportMetric(float64(stateBytes), "source-state-bytes/run")
	b.ReportMetric(float64(billed), "billed-bytes/run")
	b.ReportMetric(float64(len(windows)), "touched-windows/run")
	b.ReportMetric(gold.Bytes(), "gold-state-bytes")
	b.ReportMetric(float64(readBytes), "read-bytes/refreshed")
	b.ReportMetric(float64(maintain), "maintain-bytes/day")
	b.ReportMetric(float64(feedRead), "feed-bytes/read")
	// Maintenance waits until the state has grown by
	// DefaultGoldMaintainGrowth since the last one left it (the model's
	// state: a version a group and the marker), and comes at most daily:
	// each run writes a version of each group it touches, at most two a
	// touched key (the groups of its pre- and post-image), and a marker.
	// Its DELETE is then billed for a state (1 + growth) times the model's
	// (a state that grows faster is maintained daily, as before).
	growth := DefaultGoldMaintainGrowth
	written := float64(min(2*touched, groups) + 1)
	perDay := float64(24 * time.Hour / costSchedule)
	runs := max(perDay, math.Ceil(growth*float64(groups+1)/written))
	b.ReportMetric(written, "versions/run")
	b.ReportMetric(runs, "runs/maintenance")
	perRun := float64(maintain) / perDay // daily: as before the rule
	if runs > perDay {
		perRun = float64(maintain) * (1 + growth) / runs
	}
	b.ReportMetric(perRun, "maintain-bytes/run")
	b.ReportMetric(float64(maintain)/perDay, "daily-maintain-bytes/run")
}

// viewSQL is flow b's view as its plan renders it with hint.
func viewSQL(b *flow.Bound, loc catalog.Location, hint time.Time) (string, error) {
	v, err := plan.For(b, loc).View(hint, nil)
	return v.SQL, err
}
