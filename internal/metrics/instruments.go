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
		{IngestMessages, "CUMULATIVE", "INT64", "{message}", []string{AttrOutcome, AttrStage, AttrTopic}},
		{IngestLag, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrTopic}},
		{IngestDecodeTime, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrPath}},
		{AppendDuration, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrOutcome}},
		{AppendRows, "CUMULATIVE", "DISTRIBUTION", "{row}", nil},
		{CompactionRuns, "CUMULATIVE", "INT64", "{run}", []string{AttrFlow, AttrOutcome}},
		{CompactionDuration, "CUMULATIVE", "DISTRIBUTION", "s", []string{AttrFlow, AttrOutcome}},
		{CompactionEvents, "CUMULATIVE", "INT64", "{event}", []string{AttrFlow}},
		{CompactionJobs, "CUMULATIVE", "INT64", "{job}", []string{AttrFlow}},
		{CompactionBytesBilled, "CUMULATIVE", "INT64", "By", []string{AttrFlow}},
		{CompactionUnfoldedAge, "GAUGE", "DOUBLE", "s", []string{AttrFlow}},
		{CompactionSnapshotRowsSkipped, "GAUGE", "INT64", "{row}", []string{AttrFlow}},
		{CompactionGoldAge, "GAUGE", "DOUBLE", "s", []string{AttrView}},
	}
}
