package render

// The columns of the rows compaction's queries return. A template names
// each as {{out "Events"}} (rewritten to the constant when the templates
// are parsed, as {{col}} is) and compaction decodes the row by the same
// constant, so the statement and the code that reads it name a column
// once.
const (
	// Compaction.Stats ("stats").
	OutEvents          = "events"           // the flow's events after the watermark
	OutWithoutSequence = "without_sequence" // of them, those with a NULL sequence
	OutUnfolded        = "unfolded"         // rows ingested after the last fold's newest
	OutNewest          = "newest"           // the newest ingestion time read
	OutNewestSourceTS  = "newest_source_ts" // the newest source commit time read
	OutTailRows        = "tail_rows"        // rows a run to the new watermark leaves in the tail
	OutKeys            = "keys"             // distinct keys touched (also snapshot_stats)
	OutKeyLo           = "key_lo"           // the key ranges' low ends (KeyFilter)
	OutKeyHi           = "key_hi"           // the key ranges' high ends
	OutKeyNulls        = "key_nulls"        // events with a NULL first key
	OutTruncates       = "truncates"        // truncate events
	OutBuckets         = "buckets"          // a state of buckets: the touched keys' buckets (KeyFilter)
	OutChangesUntil    = "changes_until"    // the change feed is materialized up to it

	// Compaction.Late ("late_keys").
	OutArchiveWatermark = "archive_watermark" // the archive's maintenance read the events ingested up to it (NULL: no archive)
	OutArchiveCurrent   = "archive_current"   // the newest archive was split as the flow is now
	OutLateKeys         = "late_keys"         // touched keys with an event in the levels before their archive's boundary
	OutLateLo           = "late_lo"           // their first key values as ranges' low ends (KeyFilter)
	OutLateHi           = "late_hi"           // the ranges' high ends
	OutLateNulls        = "late_nulls"        // late keys whose first key is NULL
	OutLateBuckets      = "late_buckets"      // a state of buckets: the late keys' buckets

	// Compaction.ArchiveSlots ("archive_slots").
	OutSlots = "slots" // the archive days the archive markers name, as Unix microseconds

	// Compaction.Marker ("marker_now"), beside the state's generation and
	// watermark columns.
	OutFoldedMax = "folded_max" // the newest ingestion time the last fold read

	// Compaction.FirstPosition ("first_position").
	OutFirstPosition = "first_position"

	// SnapshotCompaction.Marker ("snapshot_marker_now"), beside the
	// generation and rows columns.
	OutAppliedVersion = "applied_version" // the applied version key, as text
	OutNewestGen      = "newest_gen"      // the state's newest generation

	// SnapshotCompaction.Stats ("snapshot_stats"), beside OutEvents and
	// OutKeys.
	OutTotalRows     = "total_rows"     // the snapshot table's rows
	OutVersions      = "versions"       // versions newer than the applied one
	OutNewestVersion = "newest_version" // the newest of them, as text
	OutOlderVersion  = "older_version"  // the newest below it, as text
	OutProcessedRows = "processed_rows" // rows processed up to the applied version

	// GoldTouched: one row per touched group's clustering value.
	OutCluster = "__cluster"

	// AppendsSince: one row per source.
	OutSource = "source"
	OutUntil  = "until"
)

// outputs are the result columns templates name with {{out "Name"}}, by
// the name of their constant without "Out".
var outputs = map[string]string{
	"Events": OutEvents, "WithoutSequence": OutWithoutSequence, "Unfolded": OutUnfolded, "Newest": OutNewest,
	"NewestSourceTS": OutNewestSourceTS, "TailRows": OutTailRows, "Keys": OutKeys, "KeyLo": OutKeyLo, "KeyHi": OutKeyHi,
	"KeyNulls": OutKeyNulls, "Truncates": OutTruncates, "Buckets": OutBuckets, "ChangesUntil": OutChangesUntil, "FoldedMax": OutFoldedMax,
	"FirstPosition": OutFirstPosition, "AppliedVersion": OutAppliedVersion, "NewestGen": OutNewestGen,
	"TotalRows": OutTotalRows, "Versions": OutVersions, "NewestVersion": OutNewestVersion, "OlderVersion": OutOlderVersion,
	"ProcessedRows": OutProcessedRows, "Cluster": OutCluster,
	"ArchiveWatermark": OutArchiveWatermark, "ArchiveCurrent": OutArchiveCurrent, "LateKeys": OutLateKeys, "LateLo": OutLateLo, "LateHi": OutLateHi, "LateNulls": OutLateNulls, "LateBuckets": OutLateBuckets, "Slots": OutSlots,
}
