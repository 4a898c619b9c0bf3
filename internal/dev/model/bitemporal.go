package model

import "sort"

// Bitemporal semantics: a key's history in business time (SCD 2 by
// sequence) is recomputed as known at each of the key's system times (the
// events whose system sequence is at or before it). Of the events known at
// one business time, the one learnt last (the latest system time; then a
// delete; then the greater message id) replaces the others: a correction
// says what was true then, so the belief it corrects takes no part in the
// history from its system time on (it neither opens nor closes a version). A version row that is
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
			for _, v := range SCD2(winners(known), cfg) {
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

// winners keeps, of one key's events at each sequence, the last in
// position order (before: the latest system time, then a delete, then the
// greater message id).
func winners(events []Event) []Event {
	sorted := append([]Event(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return before(sorted[i], sorted[j]) })
	var out []Event
	for i, e := range sorted {
		if i+1 < len(sorted) && sameSeq(e.Seq, sorted[i+1].Seq) {
			continue // a later event at this sequence replaces it
		}
		out = append(out, e)
	}
	return out
}
