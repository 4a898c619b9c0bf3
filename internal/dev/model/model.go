// Package model is the reference semantics of bqcdc's flows, written as
// plain Go over an in-memory event list. The property tests compare every
// generated view with it, so it is deliberately simple and obviously
// correct rather than fast.
//
// Semantics (Databricks AUTO CDC where it defines them):
//   - Events are deduplicated by message id; a redelivered copy counts once.
//   - Events are ordered by (sequence..., system sequence, delete last,
//     message id): the highest sequence wins regardless of arrival order; at
//     one sequence a bitemporal flow's later system time is a correction, a
//     delete wins over an upsert (Spark's AUTO CDC rule), and ties between
//     upserts are broken by message id, so the outcome is deterministic.
//   - SCD 1: per key the last event wins; a delete removes the key; a
//     truncate removes every event positioned before it. A NULL in an
//     IGNORE NULL UPDATES column keeps the last non-NULL value written since
//     the key's last delete (or truncate).
//   - SCD 2: per key, an upsert opens a version at its sequence when it is
//     the first event, follows a delete, or changes a tracked column
//     (compared after NULL-filling); otherwise it updates the open version in
//     place. A version ends where the next version or a delete starts. Two
//     events at one sequence leave an empty interval, which is not shown.
package model

import (
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/civil"
)

// Op of an event after the flow's conditions are applied.
type Op byte

// Event operations.
const (
	Upsert   Op = 'U'
	Delete   Op = 'D'
	Truncate Op = 'T'
)

// Event is one changelog row that passed the flow's WHERE, with a non-NULL
// sequence.
type Event struct {
	Key      []any // key column values
	Seq      []any // sequence values: int64, string or time.Time
	MsgID    string
	Ingested time.Time
	Op       Op
	Values   map[string]any // non-key output columns
	Sys      any            // system sequence (bitemporal flows): int64, string or time.Time
}

// Config is what the model needs of a flow.
type Config struct {
	Values     []string        // non-key output columns
	IgnoreNull map[string]bool // IGNORE NULL UPDATES columns
	Tracked    map[string]bool // SCD 2 tracked columns
}

// Row is an SCD 1 result row.
type Row struct {
	Key    []any
	Values map[string]any
}

// Version is an SCD 2 result row; End is nil for the current version.
type Version struct {
	Key        []any
	Start, End []any
	Values     map[string]any
}

// Dedupe keeps the first-ingested copy of each message id.
func Dedupe(events []Event) []Event {
	first := map[string]int{}
	var out []Event
	for _, e := range events {
		if e.MsgID == "" {
			out = append(out, e)
			continue
		}
		if i, seen := first[e.MsgID]; seen {
			if e.Ingested.Before(out[i].Ingested) {
				out[i] = e
			}
			continue
		}
		first[e.MsgID] = len(out)
		out = append(out, e)
	}
	return out
}

// Compare orders two values of one column; nil sorts first.
func Compare(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch x := a.(type) {
	case int64:
		return compareNumbers(x, b.(int64))
	case string:
		return strings.Compare(x, b.(string))
	case time.Time:
		return x.Compare(b.(time.Time))
	case float64:
		return compareNumbers(x, b.(float64))
	case *big.Rat:
		return x.Cmp(b.(*big.Rat))
	case civil.Date:
		return x.Compare(b.(civil.Date))
	}
	panic(fmt.Sprintf("model: cannot order %T", a))
}

// sortedDistinct sorts values by Compare (stably, in place) and returns
// them without repeats: each value equal by Compare to the one before it is
// dropped.
func sortedDistinct(values []any) []any {
	sort.SliceStable(values, func(i, j int) bool { return Compare(values[i], values[j]) < 0 })
	var distinct []any
	for _, v := range values {
		if len(distinct) == 0 || Compare(distinct[len(distinct)-1], v) != 0 {
			distinct = append(distinct, v)
		}
	}
	return distinct
}

// compareNumbers orders two numbers by < and > (a NaN equals everything).
func compareNumbers[N int64 | float64](x, y N) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// before reports whether a is positioned before b: by sequence; at one
// sequence, by system time (a bitemporal correction comes later), then a
// delete after an upsert (the delete wins, as in Spark's AUTO CDC), then by
// message id.
func before(a, b Event) bool {
	for i := range a.Seq {
		if c := Compare(a.Seq[i], b.Seq[i]); c != 0 {
			return c < 0
		}
	}
	if c := Compare(a.Sys, b.Sys); c != 0 {
		return c < 0
	}
	if da, db := a.Op == Delete, b.Op == Delete; da != db {
		return db
	}
	return a.MsgID < b.MsgID
}

func sameSeq(a, b []any) bool {
	for i := range a {
		if Compare(a[i], b[i]) != 0 {
			return false
		}
	}
	return true
}

// KeyString identifies a key (NULLs included, as GROUP BY does).
func KeyString(key []any) string { return fmt.Sprintf("%#v", key) }

func byKey(events []Event) (map[string][]Event, []string) {
	groups := map[string][]Event{}
	var order []string
	for _, e := range events {
		k := KeyString(e.Key)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	sort.Strings(order)
	for _, k := range order {
		g := groups[k]
		sort.SliceStable(g, func(i, j int) bool { return before(g[i], g[j]) })
	}
	return groups, order
}

// SCD1 folds events into the current state.
func SCD1(events []Event, cfg Config) []Row {
	events = Dedupe(events)
	var lastTruncate *Event
	for i, e := range events {
		if e.Op == Truncate && (lastTruncate == nil || before(*lastTruncate, e)) {
			lastTruncate = &events[i]
		}
	}
	var live []Event
	for _, e := range events {
		if e.Op != Truncate && (lastTruncate == nil || before(*lastTruncate, e)) {
			live = append(live, e)
		}
	}
	groups, order := byKey(live)
	var out []Row
	for _, k := range order {
		g := groups[k]
		last := g[len(g)-1]
		if last.Op == Delete {
			continue
		}
		row := Row{Key: last.Key, Values: map[string]any{}}
		for _, c := range cfg.Values {
			row.Values[c] = last.Values[c]
			if !cfg.IgnoreNull[c] {
				continue
			}
			row.Values[c] = nil
			for i := len(g) - 1; i >= 0 && g[i].Op != Delete; i-- {
				if v := g[i].Values[c]; v != nil {
					row.Values[c] = v
					break
				}
			}
		}
		out = append(out, row)
	}
	return out
}

// SCD2 folds events into versions.
func SCD2(events []Event, cfg Config) []Version {
	groups, order := byKey(Dedupe(events))
	var out []Version
	for _, k := range order {
		var open *Version
		var prev map[string]any // merged values of the previous event, nil after a delete
		var versions []*Version
		for _, e := range groups[k] {
			if open != nil && open.End == nil && e.Op == Delete {
				open.End = e.Seq
			}
			if e.Op == Delete {
				prev, open = nil, nil
				continue
			}
			merged := map[string]any{}
			for _, c := range cfg.Values {
				merged[c] = e.Values[c]
				if cfg.IgnoreNull[c] && merged[c] == nil && prev != nil {
					merged[c] = prev[c]
				}
			}
			opens := prev == nil
			for c := range cfg.Tracked {
				if !reflect.DeepEqual(merged[c], prev[c]) {
					opens = true
				}
			}
			if opens {
				if open != nil {
					open.End = e.Seq
				}
				open = &Version{Key: e.Key, Start: e.Seq}
				versions = append(versions, open)
			}
			open.Values = merged
			prev = merged
		}
		for _, v := range versions {
			if v.End != nil && sameSeq(v.Start, v.End) {
				continue
			}
			out = append(out, *v)
		}
	}
	return out
}
