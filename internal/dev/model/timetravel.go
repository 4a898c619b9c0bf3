package model

import (
	"sort"
	"time"
)

// Time travel is by ingestion time (_cdc_ingested_at): the target as of T is
// the fold of the events ingested at or before T, i.e. what the view showed
// at T. A change feed lists, for each ingestion time (a commit position),
// how the target differs from the target just before it.

// AsOf keeps the events ingested at or before t: the changelog as it stood
// then. (Dedupe keeps a message's first copy, so filtering first or
// deduplicating first gives the same events.)
func AsOf(events []Event, t time.Time) []Event {
	var out []Event
	for _, e := range events {
		if !e.Ingested.After(t) {
			out = append(out, e)
		}
	}
	return out
}

// Positions lists the distinct ingestion times in (from, to], ascending.
func Positions(events []Event, from, to time.Time) []time.Time {
	seen := map[time.Time]bool{}
	var out []time.Time
	for _, e := range events {
		t := e.Ingested.UTC()
		if t.After(from) && !t.After(to) && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// Snapshot is a target's rows by identity (SCD 1: the key; SCD 2: the key
// and __START_AT), each rendered canonically.
type Snapshot map[string]string

// Change types, as Delta's change data feed names them.
const (
	Insert          = "insert"
	UpdatePreimage  = "update_preimage"
	UpdatePostimage = "update_postimage"
	Remove          = "delete"
)

// Change is one row of a change feed.
type Change struct {
	Type     string
	Position time.Time
	ID, Row  string
}

// Changes is the change feed of (from, to]: at each position, every row
// whose identity appears, disappears or changes between the target as of
// the previous position (from, for the first) and as of this one. An event
// that leaves the target as it was (stale, duplicate, no-op) emits nothing.
func Changes(events []Event, from, to time.Time, target func([]Event) Snapshot) []Change {
	var out []Change
	prev := target(AsOf(events, from))
	for _, p := range Positions(events, from, to) {
		cur := target(AsOf(events, p))
		ids := map[string]bool{}
		for id := range prev {
			ids[id] = true
		}
		for id := range cur {
			ids[id] = true
		}
		sorted := make([]string, 0, len(ids))
		for id := range ids {
			sorted = append(sorted, id)
		}
		sort.Strings(sorted)
		for _, id := range sorted {
			before, had := prev[id]
			after, has := cur[id]
			switch {
			case had && !has:
				out = append(out, Change{Remove, p, id, before})
			case !had && has:
				out = append(out, Change{Insert, p, id, after})
			case before != after:
				out = append(out, Change{UpdatePreimage, p, id, before}, Change{UpdatePostimage, p, id, after})
			}
		}
		prev = cur
	}
	return out
}

// Replay applies a change feed to snap (nil: an empty table) as a consumer
// would: in position order, at one position first the rows that go (delete,
// update_preimage), then the rows that come (insert, update_postimage).
func Replay(snap Snapshot, changes []Change) Snapshot {
	out := Snapshot{}
	for id, row := range snap {
		out[id] = row
	}
	sorted := append([]Change(nil), changes...)
	goes := func(c Change) bool { return c.Type == Remove || c.Type == UpdatePreimage }
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].Position.Equal(sorted[j].Position) {
			return sorted[i].Position.Before(sorted[j].Position)
		}
		return goes(sorted[i]) && !goes(sorted[j])
	})
	for _, c := range sorted {
		if goes(c) {
			delete(out, c.ID)
		} else {
			out[c.ID] = c.Row
		}
	}
	return out
}
