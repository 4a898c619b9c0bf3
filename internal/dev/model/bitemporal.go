package model

import "sort"

// Bitemporal semantics: a key's history in business time (SCD 2 by
// sequence) is recomputed as known at each of the key's system times (the
// events whose system sequence is at or before it). A version row that is
// the same at consecutive system times is one belief, held from the first
// of them until the key's next system time at which it no longer holds
// (SysEnd nil: still held). Nothing depends on arrival order.

// Belief is a bitemporal target row.
type Belief struct {
	Version
	SysStart, SysEnd any
}

// Bitemporal folds events into beliefs; render gives a version's identity
// and content as one string (the row compared between system times).
func Bitemporal(events []Event, cfg Config, render func(Version) string) []Belief {
	groups, order := byKey(Dedupe(events))
	var out []Belief
	for _, k := range order {
		g := groups[k]
		var times []any
		for _, e := range g {
			times = append(times, e.Sys)
		}
		open := map[string]*Belief{}
		var beliefs []*Belief
		for _, t := range sortedDistinct(times) {
			var known []Event
			for _, e := range g {
				if Compare(e.Sys, t) <= 0 {
					known = append(known, e)
				}
			}
			now := map[string]Version{}
			for _, v := range SCD2(known, cfg) {
				now[render(v)] = v
			}
			for row, b := range open {
				if _, still := now[row]; !still {
					b.SysEnd = t
					delete(open, row)
				}
			}
			rows := make([]string, 0, len(now))
			for row := range now {
				rows = append(rows, row)
			}
			sort.Strings(rows)
			for _, row := range rows {
				if _, held := open[row]; !held {
					b := &Belief{Version: now[row], SysStart: t}
					open[row] = b
					beliefs = append(beliefs, b)
				}
			}
		}
		for _, b := range beliefs {
			out = append(out, *b)
		}
	}
	return out
}
