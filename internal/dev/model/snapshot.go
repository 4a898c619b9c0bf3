package model

import (
	"maps"
	"reflect"
	"slices"
	"sort"
)

// Snapshot semantics (AUTO CDC FROM SNAPSHOT), written from the snapshots
// themselves rather than from change events, so that it checks the
// renderer's translation of snapshots into events:
//   - The snapshots applied are those given (a caller leaves out the ones
//     skipped: loaded with a version at or before one already applied).
//   - SCD 1: the target is the newest snapshot.
//   - SCD 2: per key, walking the versions in ascending order, a version
//     opens where the key is present and was absent in the previous
//     snapshot (or is first seen), or where a tracked column differs from
//     the previous snapshot's row; it closes at the first snapshot the key
//     is missing from, or where the next version opens. A present row with
//     the same tracked values updates the open version in place (it shows
//     the latest values).
//   - A snapshot holds each key once (the callers' data do).

// SnapshotRow is one row of a snapshot table: its key, version and the
// target's other columns.
type SnapshotRow struct {
	Key     []any
	Version any // int64, string or time.Time
	Values  map[string]any
}

// snapshotVersions returns the distinct versions in ascending order and the
// rows of each by key.
func snapshotVersions(rows []SnapshotRow) ([]any, map[int]map[string]SnapshotRow) {
	var versions []any
	for _, r := range rows {
		versions = append(versions, r.Version)
	}
	distinct := sortedDistinct(versions)
	byVersion := map[int]map[string]SnapshotRow{}
	for _, r := range rows {
		i := sort.Search(len(distinct), func(i int) bool { return Compare(distinct[i], r.Version) >= 0 })
		if byVersion[i] == nil {
			byVersion[i] = map[string]SnapshotRow{}
		}
		byVersion[i][KeyString(r.Key)] = r
	}
	return distinct, byVersion
}

// SnapshotSCD1 is the target of an SCD 1 snapshot flow: the rows of the
// newest snapshot.
func SnapshotSCD1(rows []SnapshotRow, cfg Config) []Row {
	versions, byVersion := snapshotVersions(rows)
	if len(versions) == 0 {
		return nil
	}
	newest := byVersion[len(versions)-1]
	var out []Row
	for _, k := range slices.Sorted(maps.Keys(newest)) {
		r := newest[k]
		row := Row{Key: r.Key, Values: map[string]any{}}
		for _, c := range cfg.Values {
			row.Values[c] = r.Values[c]
		}
		out = append(out, row)
	}
	return out
}

// SnapshotSCD2 is the target of an SCD 2 snapshot flow: its versions, with
// Start and End the snapshot versions (one value each).
func SnapshotSCD2(rows []SnapshotRow, cfg Config) []Version {
	versions, byVersion := snapshotVersions(rows)
	keySet := map[string][]any{}
	for _, r := range rows {
		keySet[KeyString(r.Key)] = r.Key
	}
	var out []Version
	for _, k := range slices.Sorted(maps.Keys(keySet)) {
		var open *Version
		for i, v := range versions {
			r, present := byVersion[i][k]
			if !present {
				if open != nil {
					open.End = []any{v}
					out = append(out, *open)
					open = nil
				}
				continue
			}
			values := map[string]any{}
			for _, c := range cfg.Values {
				values[c] = r.Values[c]
			}
			if open != nil {
				changed := false
				for c := range cfg.Tracked {
					if !reflect.DeepEqual(open.Values[c], values[c]) {
						changed = true
					}
				}
				if !changed {
					open.Values = values // in place
					continue
				}
				open.End = []any{v}
				out = append(out, *open)
			}
			open = &Version{Key: r.Key, Start: []any{v}, Values: values}
		}
		if open != nil {
			out = append(out, *open)
		}
	}
	return out
}
