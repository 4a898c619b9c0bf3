package flow

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// ChangeDataFeedProperty is the table property that turns a target's
// change feed off (or on), as Delta's Change Data Feed is turned on and
// off: CREATE OR REFRESH STREAMING TABLE t TBLPROPERTIES
// ('delta.enableChangeDataFeed' = 'false'). bqcdc materializes the feed of
// every SCD 1 and SCD 2 flow by default (unlike Delta, where it is off), so
// only 'false' changes anything: such a flow gets no change table and no
// <target>_changes, and a compaction run of it reads no state at all (the
// feed's baselines are what it reads the state for).
const ChangeDataFeedProperty = "delta.enableChangeDataFeed"

// StateBucketsProperty partitions a change-stream flow's state by a hash
// bucket of its key: TBLPROPERTIES ('bqcdc.state.buckets' = '3999'). A
// compaction run then reads the state partitions of the keys it touches
// only, whatever the size of BigQuery's storage blocks (partition pruning
// by a constant filter is exact and documented; block pruning by
// clustering is neither), at the price of lookups by key through the view,
// which read every partition (docs/cost.md).
const StateBucketsProperty = "bqcdc.state.buckets"

// HistoryProperty keeps an SCD 1 flow's every event in a history beside
// its state: TBLPROPERTIES ('bqcdc.history' = 'true'). Its <target>_at
// then reads the history's blocks of the keys asked for and about a day of
// the changelog, not the changelog's whole history (sql/render/history.go),
// at the price of storing every event (as an SCD 2 state does) and of the
// generation column on every read of the state (docs/cost.md).
const HistoryProperty = "bqcdc.history"

// StateKeyRangeProperty partitions a change-stream flow's state by ranges
// of its first key, an INT64: TBLPROPERTIES ('bqcdc.state.key_range' =
// '0:20000000'), START:END with END excluded, cut into at most
// MaxKeyRangePartitions ranges of equal width. A key filter is then a
// filter on the partitioning column: a compaction run's change feed reads
// the partitions of the keys it touches and a lookup by key through the
// view the key's partition, whatever the size of BigQuery's storage
// blocks (docs/cost.md). Keys outside the range share BigQuery's
// __UNPARTITIONED__ partition, pruned by clustering only.
const StateKeyRangeProperty = "bqcdc.state.key_range"

// LatenessHorizonProperty bounds how late an SCD 2 or bitemporal flow's
// events may be and still re-cut its versions exactly: TBLPROPERTIES
// ('bqcdc.lateness_horizon_days' = '30'). Such a state keeps every event,
// because an event that arrives late can re-cut the versions around it;
// most events of a long history open no version (they change untracked
// columns only), and each costs every read of the view. With a horizon,
// maintenance drops an SCD 2 event that opens no version once its
// version's first event, it and a later event of its version were all
// ingested more than the horizon before the maintenance's watermark (the
// version keeps its first event and its last: the view shows the same
// versions with the same values), and a bitemporal event that shows the
// same values as the event before it, learnt no later, once it is older
// than the horizon (it changes no row of the view at any system time);
// sql/render, "version_groups". What it gives up: an event ingested more
// than the horizon after the events it is sequenced among re-cuts versions
// as if the dropped ones had not happened, and an SCD 2 flow's
// <target>_at at a time before the horizon may show a version's earlier
// values as its later ones (docs/compaction.md).
const LatenessHorizonProperty = "bqcdc.lateness_horizon_days"

// MaxLatenessHorizonDays bounds the horizon (ten years): past the
// changelog's retention no late event is exact anyway.
const MaxLatenessHorizonDays = 3650

// MaxKeyRangePartitions is the most ranges a state partitioned by key
// range has: a table has at most 10,000 partitions, the NULL partition
// (markers, truncates) and __UNPARTITIONED__ (keys outside the range)
// among them. A run touching more than 3,998 ranges, and maintenance of a
// state of more, write in statements of at most 3,998 ranges each (with
// those two partitions, BigQuery's 4,000 a job).
const MaxKeyRangePartitions = 9998

// KeyRange is a state's partitioning by ranges of its first key
// (StateKeyRangeProperty): [Start, End), cut into ranges of Interval.
type KeyRange struct {
	Start, End int64
	Pos        Pos // the property's value, for errors found at bind
}

// Interval is the width of each range: the span cut into at most
// MaxKeyRangePartitions ranges.
func (r *KeyRange) Interval() int64 {
	return int64(ceilDiv(uint64(r.End)-uint64(r.Start), MaxKeyRangePartitions))
}

// Partitions is the number of ranges.
func (r *KeyRange) Partitions() int64 {
	return int64(ceilDiv(uint64(r.End)-uint64(r.Start), uint64(r.Interval())))
}

// Partition is the range key k falls in, and whether it falls in one (a
// key outside [Start, End) is in BigQuery's __UNPARTITIONED__).
func (r *KeyRange) Partition(k int64) (int64, bool) {
	if k < r.Start || k >= r.End {
		return 0, false
	}
	return int64((uint64(k) - uint64(r.Start)) / uint64(r.Interval())), true
}

// Widened is a range that holds r and the keys lo to hi (lo <= hi) with
// room to grow: a side the keys outgrew is moved out by as much again as
// they needed (an auto-increment key that passed END gets END moved to
// twice the span it needed from START). It keeps END - START within 2^63 -
// 1 (the property's bound), giving up room first; ok is false when even
// lo to hi spans more.
func (r *KeyRange) Widened(lo, hi int64) (KeyRange, bool) {
	start, end := big.NewInt(r.Start), big.NewInt(r.End)
	bLo, bEnd := big.NewInt(lo), new(big.Int).Add(big.NewInt(hi), big.NewInt(1))
	newStart, newEnd := new(big.Int).Set(start), new(big.Int).Set(end)
	if bLo.Cmp(start) < 0 { // START - 2 × (END - lo) + (END - START) = END - 2 × (END - lo)
		newStart.Sub(end, new(big.Int).Lsh(new(big.Int).Sub(end, bLo), 1))
	}
	if bEnd.Cmp(end) > 0 {
		newEnd.Add(start, new(big.Int).Lsh(new(big.Int).Sub(bEnd, start), 1))
	}
	minI, maxI, maxSpan := big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64), big.NewInt(math.MaxInt64)
	// The keys themselves first: the range must hold lo to hi and r.
	needLo, needEnd := bLo, bEnd
	if start.Cmp(needLo) < 0 {
		needLo = start
	}
	if end.Cmp(needEnd) > 0 {
		needEnd = end
	}
	if needEnd.Cmp(maxI) > 0 || new(big.Int).Sub(needEnd, needLo).Cmp(maxSpan) > 0 {
		return KeyRange{}, false
	}
	// Then the room, within INT64 and the span.
	if newStart.Cmp(minI) < 0 {
		newStart.Set(minI)
	}
	if newEnd.Cmp(maxI) > 0 {
		newEnd.Set(maxI)
	}
	if new(big.Int).Sub(newEnd, newStart).Cmp(maxSpan) > 0 {
		// Room on both sides past the span: keep the keys, split what is left.
		spare := new(big.Int).Sub(maxSpan, new(big.Int).Sub(needEnd, needLo))
		below := new(big.Int).Sub(needLo, newStart)
		if below.Cmp(spare) > 0 {
			below.Set(spare)
		}
		newStart.Sub(needLo, below)
		newEnd.Add(newStart, maxSpan)
		if newEnd.Cmp(maxI) > 0 {
			newEnd.Set(maxI)
		}
	}
	return KeyRange{Start: newStart.Int64(), End: newEnd.Int64()}, true
}

// ceilDiv is a / b rounded up, without overflow (a span of int64s is up
// to 2^64 - 1).
func ceilDiv(a, b uint64) uint64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// parseKeyRange reads START:END.
func parseKeyRange(s string) (*KeyRange, bool) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return nil, false
	}
	start, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	end, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil || end <= start || uint64(end)-uint64(start) > math.MaxInt64 {
		// A span past an INT64 would overflow the ranges' arithmetic in SQL.
		return nil, false
	}
	return &KeyRange{Start: start, End: end}, true
}

// MaxStateBuckets is the most buckets a state may have: a table has at
// most 10,000 partitions, the NULL partition (markers and truncates) and
// BigQuery's __UNPARTITIONED__ among them.
const MaxStateBuckets = 9998

// BucketsPerJob is the most buckets one statement writes: one job
// modifies at most 4,000 partitions of a table (BigQuery's limit, DML
// included), the NULL partition one of them. A run touching more buckets,
// and maintenance of a state of more, split their statements by ranges of
// buckets.
const BucketsPerJob = 3999

// tableDecl is what a streaming table's declaration says that bqcdc uses:
// whether its change feed is off, and its state's buckets.
type tableDecl struct {
	target     Target
	noFeed     bool
	buckets    int
	bucketsPos Pos
	history    bool
	historyPos Pos
	keyRange   *KeyRange
	horizon    int
	horizonPos Pos
}

// says reports whether the declaration says anything applyDecls gives a
// flow beside its change feed.
func (d tableDecl) says() bool {
	return d.buckets > 0 || d.history || d.keyRange != nil || d.horizon > 0
}

// tableProperties reads TBLPROPERTIES ('key' = value, ...) after the
// keyword: the change feed's property, checked; any other property is
// accepted and ignored (bqcdc's targets are views: Delta's properties do
// not apply to them).
func (p *parser) tableProperties(d *tableDecl) *Error {
	p.next() // TBLPROPERTIES
	if err := p.punct("("); err != nil {
		return err
	}
	for {
		k := p.peek()
		key := k.Text
		switch k.Kind {
		case tokString:
			p.next()
		case tokIdent, tokQuoted: // a dotted key without quotes: pipelines.channel
			p.next()
			for p.isPunct(".") && (p.peekN(1).Kind == tokIdent || p.peekN(1).Kind == tokQuoted) {
				p.next()
				key += "." + p.next().Text
			}
		default:
			return errorf(k.Pos, "TBLPROPERTIES expects key = value, found %s", k.describe())
		}
		if err := p.punct("="); err != nil {
			return err
		}
		v := p.next()
		if v.Kind != tokString && v.Kind != tokIdent && v.Kind != tokNumber {
			return errorf(v.Pos, "TBLPROPERTIES expects a value after %s =, found %s", key, v.describe())
		}
		if strings.EqualFold(key, ChangeDataFeedProperty) {
			switch strings.ToLower(v.Text) {
			case "true":
				d.noFeed = false
			case "false":
				d.noFeed = true
			default:
				return errorf(v.Pos, "%s is 'true' or 'false', found %s", ChangeDataFeedProperty, v.describe())
			}
		}
		if strings.EqualFold(key, HistoryProperty) {
			switch strings.ToLower(v.Text) {
			case "true":
				d.history, d.historyPos = true, v.Pos
			case "false":
				d.history = false
			default:
				return errorf(v.Pos, "%s is 'true' or 'false', found %s", HistoryProperty, v.describe())
			}
		}
		if strings.EqualFold(key, StateBucketsProperty) {
			n, err := strconv.Atoi(v.Text)
			if err != nil || n < 2 || n > MaxStateBuckets {
				return errorf(v.Pos, "%s is a whole number of buckets from 2 to %d (a BigQuery table has at most 10,000 partitions), found %s", StateBucketsProperty, MaxStateBuckets, v.describe())
			}
			d.buckets, d.bucketsPos = n, v.Pos
		}
		if strings.EqualFold(key, StateKeyRangeProperty) {
			r, ok := parseKeyRange(v.Text)
			if !ok {
				return errorf(v.Pos, "%s is START:END, two whole numbers (INT64) with START < END (END excluded; END - START at most 2^63 - 1), the range of the first key the state's partitions cover, found %s", StateKeyRangeProperty, v.describe())
			}
			r.Pos = v.Pos
			d.keyRange = r
		}
		if strings.EqualFold(key, LatenessHorizonProperty) {
			n, err := strconv.Atoi(v.Text)
			if err != nil || n < 1 || n > MaxLatenessHorizonDays {
				return errorf(v.Pos, "%s is a whole number of days from 1 to %d (events ingested more than that after the events they are sequenced among re-cut versions inexactly), found %s", LatenessHorizonProperty, MaxLatenessHorizonDays, v.describe())
			}
			d.horizon, d.horizonPos = n, v.Pos
		}
		if !p.isPunct(",") {
			return p.punct(")")
		}
		p.next()
	}
}

// applyDecls gives each flow what its target's declaration says. A
// declaration of a target no flow writes says nothing (Databricks allows
// declaring a table a flow of another pipeline fills). Buckets on a flow
// without a change feed (a snapshot flow, a bitemporal one, a feed turned
// off) are an error at the property.
func applyDecls(flows []*Flow, decls []tableDecl) ErrorList {
	byTarget := map[string]tableDecl{}
	for _, d := range decls {
		byTarget[strings.ToLower(d.target.String())] = d
	}
	var errs ErrorList
	for _, f := range flows {
		d, ok := byTarget[strings.ToLower(f.Target.String())]
		if !ok {
			continue
		}
		if d.noFeed {
			f.NoChangeFeed = true
		}
		if d.history {
			switch {
			case f.Kind() != SCD1:
				// An SCD 2 or bitemporal state keeps every event already;
				// a snapshot flow has no <target>_at.
				errs = append(errs, &Error{Pos: d.historyPos, Flow: f.Name, Msg: fmt.Sprintf("%s: flow %s is not an SCD 1 flow of a change stream (an SCD 2 or bitemporal state keeps every event already; a snapshot flow has no %s)", HistoryProperty, f.Name, "<target>_at")})
			case d.keyRange != nil:
				// Refused at the key range (below).
			case d.buckets > 0:
				errs = append(errs, &Error{Pos: d.historyPos, Flow: f.Name, Msg: fmt.Sprintf("%s: a state of buckets (%s) keeps no history: its partitions are buckets", HistoryProperty, StateBucketsProperty)})
			default:
				f.History = true
			}
		}
		if d.buckets > 0 {
			switch {
			case f.Kind().Snapshot():
				errs = append(errs, &Error{Pos: d.bucketsPos, Flow: f.Name, Msg: fmt.Sprintf("%s: a snapshot flow's state is not partitioned by buckets (only change-stream flows' states are)", StateBucketsProperty)})
				continue
			case !f.ChangeFeed():
				// Buckets serve the change feed's read of the touched keys'
				// state; without a feed a run reads no state, and buckets
				// would only cost lookups their pruning.
				errs = append(errs, &Error{Pos: d.bucketsPos, Flow: f.Name, Msg: fmt.Sprintf("%s: flow %s keeps no change feed (bitemporal, or delta.enableChangeDataFeed = false), so its runs read no state: buckets would only cost its lookups", StateBucketsProperty, f.Name)})
				continue
			}
			f.StateBuckets = d.buckets
		}
		if d.horizon > 0 {
			switch {
			case f.Kind() != SCD2 && f.Kind() != Bitemporal:
				// SCD 1 keeps no event that decides nothing; a snapshot
				// flow's state keeps versions, not events.
				errs = append(errs, &Error{Pos: d.horizonPos, Flow: f.Name, Msg: fmt.Sprintf("%s: flow %s is not an SCD 2 or bitemporal flow of a change stream (the horizon drops the events of their histories that no view needs)", LatenessHorizonProperty, f.Name)})
			case f.IgnoreNull != nil:
				// A dropped event may carry the value that a later event's
				// NULL keeps.
				errs = append(errs, &Error{Pos: d.horizonPos, Flow: f.Name, Msg: fmt.Sprintf("%s: flow %s has IGNORE NULL UPDATES, where an event that opens no version may carry the value a later NULL keeps: its events cannot be dropped", LatenessHorizonProperty, f.Name)})
			default:
				f.LatenessHorizonDays = d.horizon
			}
		}
		if r := d.keyRange; r != nil {
			switch {
			case f.Kind().Snapshot():
				errs = append(errs, &Error{Pos: r.Pos, Flow: f.Name, Msg: fmt.Sprintf("%s: a snapshot flow's state is not partitioned by key range (only change-stream flows' states are)", StateKeyRangeProperty)})
			case d.buckets > 0:
				errs = append(errs, &Error{Pos: r.Pos, Flow: f.Name, Msg: fmt.Sprintf("%s: the state is partitioned by buckets (%s) already: a table has one partitioning; keep one of the two", StateKeyRangeProperty, StateBucketsProperty)})
			case d.history:
				errs = append(errs, &Error{Pos: r.Pos, Flow: f.Name, Msg: fmt.Sprintf("%s: an SCD 1 history (%s) lives in partitions of generations, which a state partitioned by key range does not have; keep one of the two", StateKeyRangeProperty, HistoryProperty)})
			default:
				f.StateKeyRange = r
			}
		}
	}
	return errs
}
