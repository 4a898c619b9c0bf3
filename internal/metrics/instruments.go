package metrics

// Instrument describes one instrument as Cloud Monitoring stores it, so
// Terraform can declare the metric descriptors before any function writes
// (an alert policy on a metric type that does not exist yet is refused).
// terraform/monitoring_test.go checks the descriptors against this list,
// and a test here checks the list against what the instruments emit.
type Instrument struct {
	Name      string   // OTel name; the metric type is workload.googleapis.com/Name
	Kind      string   // Cloud Monitoring metric kind: CUMULATIVE or GAUGE
	ValueType string   // INT64, DOUBLE or DISTRIBUTION
	Unit      string   // UCUM, as the instrument declares it
	Labels    []string // attribute keys, sorted; the exporter adds service_name
	// Description is the instrument's, as New declares it (Cloud Monitoring
	// shows it beside the metric).
	Description string
}

// MetricTypePrefix is what the Cloud Monitoring exporter puts before an
// instrument's name.
const MetricTypePrefix = "workload.googleapis.com/"

// ServiceNameLabel is the label the exporter adds from the resource's
// service.name ("bqcdc-ingest", "bqcdc-compact").
const ServiceNameLabel = "service_name"

// Instruments lists every instrument New creates, in Names order.
func Instruments() []Instrument {
	return []Instrument{
		{IngestMessages, "CUMULATIVE", "INT64", "{message}", []string{AttrOutcome, AttrStage, AttrTopic},
			"Pub/Sub messages the ingest function finished, by topic and outcome (appended, tombstone, dead_lettered, retried) and, for the last two, the failing stage."},
		{IngestLag, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrTopic},
			"From the message's Pub/Sub publish time to its changelog append acknowledged, by topic."},
		{IngestDecodeTime, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrPath},
			"From a message's payload to its changelog row's bytes (decode, flatten, convert, encode), by path (always compiled: the one row path)."},
		{AppendDuration, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrOutcome},
			"One Storage Write AppendRows call (a batch of rows), by outcome: ok, refused (rows BigQuery refused), error (retried)."},
		{AppendRows, "CUMULATIVE", "DISTRIBUTION", "{row}", nil,
			"Rows one AppendRows call carried: the rows of concurrent requests batched together."},
		{CompactionRuns, "CUMULATIVE", "INT64", "{run}", []string{AttrFlow, AttrOutcome},
			"Compaction runs of each flow, by outcome: compacted, up to date, idle, deferred, settling, failed."},
		{CompactionDuration, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrFlow, AttrOutcome},
			"Run time of one flow's compaction, by flow and outcome."},
		{CompactionEvents, "CUMULATIVE", "INT64", "{event}", []string{AttrFlow},
			"Changelog rows compaction read after each flow's previous watermark."},
		{CompactionJobs, "CUMULATIVE", "INT64", "{job}", []string{AttrFlow},
			"BigQuery query jobs compaction started, by flow (0 for an idle flow)."},
		{CompactionBytesBilled, "CUMULATIVE", "INT64", "By", []string{AttrFlow},
			"Bytes BigQuery billed for compaction's query jobs, by flow."},
		{CompactionUnfoldedAge, "GAUGE", "DOUBLE", "s", []string{AttrFlow},
			"After each run of a flow: how long changes may have waited to be folded (0 when nothing waits; else how far its watermark trails the clock)."},
		{CompactionSnapshotRowsSkipped, "GAUGE", "INT64", "{row}", []string{AttrFlow},
			"Snapshot flows, after each run that read the table: its rows never applied (a snapshot loaded with a version at or before one already applied, or a NULL version)."},
		{CompactionGoldAge, "GAUGE", "DOUBLE", "s", []string{AttrView},
			"After each run of a flow, for each materialized view over it that compaction refreshes: how far the position its <view>_refreshed holds trails the clock."},
	}
}
