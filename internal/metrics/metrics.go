// Package metrics owns bqcdc's OpenTelemetry instruments: their names,
// units, attributes and bucket boundaries, and the cheap calls the pipeline
// makes to record them. Nothing else creates an instrument, so the list
// below is the whole set, and Terraform's dashboard and alert policies are
// tested against Names.
//
// In Cloud Monitoring an instrument named N is the metric type
// workload.googleapis.com/N (the exporter's default), written against the
// monitored resource generic_task (Cloud Run instances map to it).
//
// Every method is safe on a nil *Recorder and then does nothing, so a
// component built without metrics pays one nil check. On the ingest hot
// path the instruments and the attribute sets of each topic are built
// once: recording a message allocates nothing.
package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names.
const (
	// IngestMessages counts messages by how they ended (attributes topic,
	// outcome, and stage for dead_lettered and retried).
	IngestMessages = "bqcdc.ingest.messages"
	// IngestLag is Pub/Sub publish time -> append acknowledged, seconds
	// (attribute topic), for every appended message.
	IngestLag = "bqcdc.ingest.lag"
	// IngestDecodeTime is the time from a message's payload to its row's
	// bytes, seconds (attribute path: always "compiled", the one row path;
	// kept so the series of deployments made before it continue).
	IngestDecodeTime = "bqcdc.ingest.decode_time"
	// AppendDuration is one Storage Write AppendRows call, seconds
	// (attribute outcome: ok, refused, error).
	AppendDuration = "bqcdc.append.duration"
	// AppendRows is the rows one AppendRows call carried (the batch size).
	AppendRows = "bqcdc.append.rows"
	// CompactionRuns counts flows' compaction runs (attributes flow, outcome).
	CompactionRuns = "bqcdc.compaction.runs"
	// CompactionDuration is one flow's run, seconds (attributes flow, outcome).
	CompactionDuration = "bqcdc.compaction.duration"
	// CompactionEvents counts changelog rows the runs read (attribute flow).
	CompactionEvents = "bqcdc.compaction.events"
	// CompactionJobs counts the query jobs the runs started (attribute flow).
	CompactionJobs = "bqcdc.compaction.jobs"
	// CompactionBytesBilled counts the bytes BigQuery billed for them
	// (attribute flow).
	CompactionBytesBilled = "bqcdc.compaction.bytes_billed"
	// CompactionUnfoldedAge is, after each run of a flow, how long
	// changes may have waited to be folded, seconds (attribute flow): 0 when
	// the run left nothing to fold (idle, up to date), else how far the
	// flow's watermark trails the clock (the visibility lag after a
	// compaction; growing while runs fail or are deferred).
	CompactionUnfoldedAge = "bqcdc.compaction.unfolded_age"
	// CompactionSnapshotRowsSkipped is, after each run of a snapshot flow
	// that read its table, the rows of that table never applied (loaded
	// with a version at or before one already applied, or with a NULL
	// version) (attribute flow).
	CompactionSnapshotRowsSkipped = "bqcdc.compaction.snapshot_rows_skipped"
	// CompactionGoldAge is, after each run of a flow, how far each
	// materialized view over it that compaction refreshes trails the
	// clock, seconds (attribute view): the position its <view>_refreshed
	// holds (the source's change feed, a compaction period behind at best;
	// growing while its refreshes fail).
	CompactionGoldAge = "bqcdc.compaction.gold_age"
)

// Names lists every instrument, in Instruments order.
func Names() []string {
	var names []string
	for _, in := range Instruments() {
		names = append(names, in.Name)
	}
	return names
}

// Attribute keys.
const (
	AttrTopic   = "topic"
	AttrOutcome = "outcome"
	AttrStage   = "stage"
	AttrPath    = "path"
	AttrFlow    = "flow"
	AttrView    = "view"
)

// Message outcomes (attribute outcome of IngestMessages).
const (
	Appended     = "appended"
	Tombstone    = "tombstone"
	DeadLettered = "dead_lettered"
	Retried      = "retried"
)

// Append outcomes (attribute outcome of AppendDuration).
const (
	AppendOK      = "ok"
	AppendRefused = "refused" // BigQuery refused rows: they fail permanently
	AppendError   = "error"   // connection, server, timeout: the rows are retried
)

// Bucket boundaries, in seconds unless named otherwise. Lag spans a healthy
// push (tens of ms) to a backlog of hours; decoding a message takes
// microseconds; an append tens of ms to its two-minute timeout.
var (
	lagBuckets      = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200}
	decodeBuckets   = []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.1, 1}
	appendBuckets   = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	rowsBuckets     = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 500}
	compactBuckets  = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	instrumentScope = "github.com/bqcdc/bqcdc"
	// buckets are the histograms' boundaries, by instrument.
	buckets = map[string][]float64{IngestLag: lagBuckets, IngestDecodeTime: decodeBuckets, AppendDuration: appendBuckets,
		AppendRows: rowsBuckets, CompactionDuration: compactBuckets}
)

// Recorder records bqcdc's measurements. A nil *Recorder records nothing.
type Recorder struct {
	messages      metric.Int64Counter
	lag           metric.Float64Histogram
	decode        metric.Float64Histogram
	appendTime    metric.Float64Histogram
	appendRows    metric.Int64Histogram
	runs          metric.Int64Counter
	compactTime   metric.Float64Histogram
	events        metric.Int64Counter
	jobs          metric.Int64Counter
	bytesBilled   metric.Int64Counter
	unfoldedAge   metric.Float64Gauge
	rowsSkipped   metric.Int64Gauge
	goldAge       metric.Float64Gauge
	compiled      []metric.RecordOption
	appendOutcome map[string][]metric.RecordOption

	topics sync.Map // topic -> *topicSets
}

// topicSets are the attribute sets of one topic, built on its first message.
type topicSets struct {
	appended, tombstone []metric.AddOption
	lag                 []metric.RecordOption
}

// New creates the instruments on mp's meter.
func New(mp metric.MeterProvider) (*Recorder, error) {
	c := creator{m: mp.Meter(instrumentScope), declared: map[string]Instrument{}}
	for _, in := range Instruments() {
		c.declared[in.Name] = in
	}
	r := &Recorder{appendOutcome: map[string][]metric.RecordOption{}}
	r.messages = create(&c, IngestMessages, c.m.Int64Counter)
	r.lag = create(&c, IngestLag, c.m.Float64Histogram)
	r.decode = create(&c, IngestDecodeTime, c.m.Float64Histogram)
	r.appendTime = create(&c, AppendDuration, c.m.Float64Histogram)
	r.appendRows = create(&c, AppendRows, c.m.Int64Histogram)
	r.runs = create(&c, CompactionRuns, c.m.Int64Counter)
	r.compactTime = create(&c, CompactionDuration, c.m.Float64Histogram)
	r.events = create(&c, CompactionEvents, c.m.Int64Counter)
	r.jobs = create(&c, CompactionJobs, c.m.Int64Counter)
	r.bytesBilled = create(&c, CompactionBytesBilled, c.m.Int64Counter)
	r.unfoldedAge = create(&c, CompactionUnfoldedAge, c.m.Float64Gauge)
	r.rowsSkipped = create(&c, CompactionSnapshotRowsSkipped, c.m.Int64Gauge)
	r.goldAge = create(&c, CompactionGoldAge, c.m.Float64Gauge)
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("creating the metric instruments: %v", c.errs)
	}
	r.compiled = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrPath, "compiled")))}
	for _, o := range []string{AppendOK, AppendRefused, AppendError} {
		r.appendOutcome[o] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrOutcome, o)))}
	}
	return r, nil
}

// creator creates instruments as Instruments declares them, gathering
// the errors.
type creator struct {
	m        metric.Meter
	declared map[string]Instrument
	errs     []error
}

// create makes the instrument name with mk (the meter's method for its
// type), its unit and description from Instruments and its buckets, if it
// is a histogram. The option types differ by instrument type, but every
// one of them accepts WithUnit and WithDescription, and the histograms'
// accept WithExplicitBucketBoundaries, hence the conversions.
func create[T any, O any](c *creator, name string, mk func(string, ...O) (T, error)) T {
	in := c.declared[name]
	opts := []O{any(metric.WithUnit(in.Unit)).(O), any(metric.WithDescription(in.Description)).(O)}
	if b, ok := buckets[name]; ok {
		opts = append(opts, any(metric.WithExplicitBucketBoundaries(b...)).(O))
	}
	t, err := mk(name, opts...)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
	}
	return t
}

func (r *Recorder) sets(topic string) *topicSets {
	if s, ok := r.topics.Load(topic); ok {
		return s.(*topicSets)
	}
	t := attribute.String(AttrTopic, topic)
	s := &topicSets{
		appended:  []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(t, attribute.String(AttrOutcome, Appended)))},
		tombstone: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(t, attribute.String(AttrOutcome, Tombstone)))},
		lag:       []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(t))},
	}
	actual, _ := r.topics.LoadOrStore(topic, s)
	return actual.(*topicSets)
}

// Appended records a message appended to its changelog, and its lag from
// publish (not recorded when the publish time is unknown).
func (r *Recorder) Appended(ctx context.Context, topic string, published, acknowledged time.Time) {
	if r == nil {
		return
	}
	s := r.sets(topic)
	r.messages.Add(ctx, 1, s.appended...)
	if !published.IsZero() {
		r.lag.Record(ctx, acknowledged.Sub(published).Seconds(), s.lag...)
	}
}

// Tombstone records a tombstone acknowledged.
func (r *Recorder) Tombstone(ctx context.Context, topic string) {
	if r == nil {
		return
	}
	r.messages.Add(ctx, 1, r.sets(topic).tombstone...)
}

// Failed records a message dead-lettered (outcome DeadLettered) or left for
// redelivery (Retried) at stage. Failures are rare: their attribute sets
// are built per call.
func (r *Recorder) Failed(ctx context.Context, topic, outcome, stage string) {
	if r == nil {
		return
	}
	r.messages.Add(ctx, 1, metric.WithAttributes(attribute.String(AttrTopic, topic), attribute.String(AttrOutcome, outcome),
		attribute.String(AttrStage, stage)))
}

// Decoded records the time from a payload to its row's bytes.
func (r *Recorder) Decoded(ctx context.Context, d time.Duration) {
	if r == nil {
		return
	}
	r.decode.Record(ctx, d.Seconds(), r.compiled...)
}

// AppendCall records one AppendRows call: its rows, time and outcome
// (AppendOK, AppendRefused, AppendError).
func (r *Recorder) AppendCall(ctx context.Context, rows int, d time.Duration, outcome string) {
	if r == nil {
		return
	}
	r.appendTime.Record(ctx, d.Seconds(), r.appendOutcome[outcome]...)
	r.appendRows.Record(ctx, int64(rows))
}

// Compaction is one flow's run, as the compactor reports it.
type Compaction struct {
	Flow, Outcome string
	Duration      time.Duration
	Events        int64
	Jobs          int
	BytesBilled   int64
	// UnfoldedAge is how long changes may have waited to be folded after
	// the run (see CompactionUnfoldedAge); negative means unknown and
	// records nothing.
	UnfoldedAge time.Duration
	// Snapshot is set for a snapshot flow's run that read its table's
	// statistics: SnapshotRowsSkipped, the table's rows never applied, is
	// recorded then only.
	Snapshot            bool
	SnapshotRowsSkipped int64
}

// GoldRefreshed records how far a materialized view's refreshed state
// trails the clock after a run of its source flow (age: now less the
// position it holds).
func (r *Recorder) GoldRefreshed(ctx context.Context, view string, age time.Duration) {
	if r == nil {
		return
	}
	r.goldAge.Record(ctx, age.Seconds(), metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrView, view))))
}

// Compacted records one flow's run.
func (r *Recorder) Compacted(ctx context.Context, c Compaction) {
	if r == nil {
		return
	}
	flow := attribute.String(AttrFlow, c.Flow)
	both := metric.WithAttributeSet(attribute.NewSet(flow, attribute.String(AttrOutcome, c.Outcome)))
	only := metric.WithAttributeSet(attribute.NewSet(flow))
	r.runs.Add(ctx, 1, both)
	r.compactTime.Record(ctx, c.Duration.Seconds(), both)
	r.events.Add(ctx, c.Events, only)
	r.jobs.Add(ctx, int64(c.Jobs), only)
	r.bytesBilled.Add(ctx, c.BytesBilled, only)
	if c.UnfoldedAge >= 0 {
		r.unfoldedAge.Record(ctx, c.UnfoldedAge.Seconds(), only)
	}
	if c.Snapshot {
		r.rowsSkipped.Record(ctx, c.SnapshotRowsSkipped, only)
	}
}
