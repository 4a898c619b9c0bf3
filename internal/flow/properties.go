package flow

import (
	"fmt"
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
	}
	return errs
}
