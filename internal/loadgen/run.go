package loadgen

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/progress"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

// Target is where a load goes and is measured.
type Target struct {
	PubSub   *pubsub.Client
	Registry *registry.Client // the schemas are registered under <topic>-value
	BigQuery *bigquery.Client
	Dataset  string
	// Progress receives the publishing's and the landing's progress (one
	// updating line on a terminal, a line every few seconds elsewhere);
	// nil is silent.
	Progress io.Writer
}

// Result is what a run measured.
type Result struct {
	Run          string        `json:"run"`
	Published    int           `json:"published"`
	Landed       int           `json:"landed"`        // distinct messages of the run in the changelogs
	DeadLettered int           `json:"dead_lettered"` // of the run's topics, since it started
	Publishing   time.Duration `json:"publishing_ns"` // first to last publish acknowledged
	Landing      time.Duration `json:"landing_ns"`    // first publish to last append
	MsgsPerSec   float64       `json:"msgs_per_s"`    // landed / landing
	P50          time.Duration `json:"p50_ns"`        // publish time -> append
	P99          time.Duration `json:"p99_ns"`
	Max          time.Duration `json:"max_ns"`
}

func (r Result) String() string {
	return fmt.Sprintf("run %s: %d published, %d landed, %d dead-lettered; landed %.0f msg/s (%.1f s); publish->append p50 %v p99 %v max %v",
		r.Run, r.Published, r.Landed, r.DeadLettered, r.MsgsPerSec, r.Landing.Seconds(),
		r.P50.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond))
}

// Run registers the schemas, publishes the load, waits up to wait for every
// message to land or be dead-lettered, and measures.
func Run(ctx context.Context, s Spec, t Target, wait time.Duration) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Run: fmt.Sprintf("r%d", time.Now().UnixNano())}
	msgs, err := s.encode(ctx, t, res.Run)
	if err != nil {
		return res, err
	}
	start := time.Now()
	pub := t.line(fmt.Sprintf("publish to %d topics", s.Tables), len(msgs))
	if err := s.publish(ctx, t, msgs, pub); err != nil {
		return res, err
	}
	res.Published = len(msgs)
	res.Publishing = time.Since(start)
	pub.Finish()
	land := t.line("land", res.Published)
	deadline := time.Now().Add(wait)
	for {
		if res.Landed, err = s.landed(ctx, t, res.Run); err != nil {
			return res, err
		}
		if res.DeadLettered, err = s.deadLettered(ctx, t, start); err != nil {
			return res, err
		}
		note := fmt.Sprintf("%d dead-lettered", res.DeadLettered)
		if res.Landed+res.DeadLettered >= res.Published || time.Now().After(deadline) {
			land.Set(res.Landed+res.DeadLettered, note)
			land.Finish()
			break
		}
		land.Set(res.Landed+res.DeadLettered, note)
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return res, s.latencies(ctx, t, start, &res)
}

// line starts a progress line on t.Progress (nil when there is none).
func (t Target) line(what string, total int) *progress.Meter {
	if t.Progress == nil {
		return nil
	}
	return progress.New(t.Progress, what, "messages", total, progress.IsTerminal(t.Progress))
}

type encoded struct {
	topic string
	data  []byte
}

// encode registers each table's schema and encodes its messages,
// Confluent-framed, interleaving the tables as a burst across them would.
func (s Spec) encode(ctx context.Context, t Target, run string) ([]encoded, error) {
	perTable := make([][]encoded, s.Tables)
	for i := range s.Tables {
		text := s.Schema(i)
		id, err := t.Registry.Register(ctx, catalog.Subject(s.Topic(i)), text)
		if err != nil {
			return nil, fmt.Errorf("registering the schema of %s: %w", s.Topic(i), err)
		}
		sch, err := avro.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("parsing the generated schema of %s: %w", s.Topic(i), err)
		}
		api := avro.Config{}.Freeze()
		for _, m := range s.Generate(i, run) {
			b, err := api.Marshal(sch, m.Record)
			if err != nil {
				return nil, fmt.Errorf("encoding a message of %s: %w", s.Topic(i), err)
			}
			perTable[i] = append(perTable[i], encoded{topic: s.Topic(i), data: wire.Append(nil, int32(id), b)})
		}
	}
	var out []encoded
	for m := 0; m < s.Messages; m++ {
		for i := range perTable {
			out = append(out, perTable[i][m])
		}
	}
	return out, nil
}

// publish sends the messages, all at once or at s.Rate, and waits for
// Pub/Sub to acknowledge each.
func (s Spec) publish(ctx context.Context, t Target, msgs []encoded, line *progress.Meter) error {
	pubs := map[string]*pubsub.Publisher{}
	for _, topic := range s.Topics() {
		p := t.PubSub.Publisher(topic)
		p.PublishSettings.NumGoroutines = 4
		pubs[topic] = p
	}
	defer func() {
		for _, p := range pubs {
			p.Stop()
		}
	}()
	var tick *time.Ticker
	if s.Rate > 0 {
		tick = time.NewTicker(time.Duration(float64(time.Second) / s.Rate))
		defer tick.Stop()
	}
	var (
		wg       sync.WaitGroup
		failed   atomic.Int64
		firstErr atomic.Value
	)
	for _, m := range msgs {
		if tick != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
		r := pubs[m.topic].Publish(ctx, &pubsub.Message{Data: m.data})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Get(ctx); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			line.Add(1)
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("publishing: %d messages failed: %v", n, firstErr.Load())
	}
	return nil
}

func (s Spec) landed(ctx context.Context, t Target, run string) (int, error) {
	total := 0
	for i := range s.Tables {
		q := t.BigQuery.Query(fmt.Sprintf("SELECT COUNT(DISTINCT `_cdc_message_id`) AS n FROM `%s.%s` WHERE lg_run = @run", t.Dataset, s.ChangelogTable(i)))
		q.Parameters = []bigquery.QueryParameter{{Name: "run", Value: run}}
		n, err := count(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("counting what landed in %s: %w", s.ChangelogTable(i), err)
		}
		total += n
	}
	return total, nil
}

func (s Spec) deadLettered(ctx context.Context, t Target, since time.Time) (int, error) {
	q := t.BigQuery.Query(fmt.Sprintf("SELECT COUNT(*) AS n FROM `%s.%s` WHERE STARTS_WITH(topic, @prefix) AND dead_lettered_at >= @since",
		t.Dataset, catalog.DeadLetterTable))
	q.Parameters = []bigquery.QueryParameter{{Name: "prefix", Value: s.Prefix + "."}, {Name: "since", Value: since.Add(-time.Minute)}}
	n, err := count(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("counting dead letters: %w", err)
	}
	return n, nil
}

func count(ctx context.Context, q *bigquery.Query) (int, error) {
	it, err := q.Read(ctx)
	if err != nil {
		return 0, err
	}
	rows, err := clients.Collect(it)
	if err != nil || len(rows) != 1 {
		return 0, fmt.Errorf("reading a count (%d rows): %w", len(rows), err)
	}
	n, _ := rows[0]["n"].(int64)
	return int(n), nil
}

// latencies reads every landed row's publish and append times.
func (s Spec) latencies(ctx context.Context, t Target, start time.Time, res *Result) error {
	var lat []time.Duration
	var last int64
	for i := range s.Tables {
		q := t.BigQuery.Query(fmt.Sprintf("SELECT UNIX_MICROS(MIN(`_cdc_publish_time`)) AS p, UNIX_MICROS(MIN(`_cdc_ingested_at`)) AS a FROM `%s.%s` WHERE lg_run = @run GROUP BY `_cdc_message_id`",
			t.Dataset, s.ChangelogTable(i)))
		q.Parameters = []bigquery.QueryParameter{{Name: "run", Value: res.Run}}
		it, err := q.Read(ctx)
		if err != nil {
			return fmt.Errorf("reading latencies of %s: %w", s.ChangelogTable(i), err)
		}
		rows, err := clients.Collect(it)
		if err != nil {
			return err
		}
		for _, r := range rows {
			p, _ := r["p"].(int64)
			a, _ := r["a"].(int64)
			lat = append(lat, time.Duration(a-p)*time.Microsecond)
			last = max(last, a)
		}
	}
	if len(lat) == 0 {
		return nil
	}
	slices.Sort(lat)
	res.P50, res.P99, res.Max = lat[len(lat)/2], lat[(len(lat)*99)/100], lat[len(lat)-1]
	res.Landing = time.UnixMicro(last).Sub(start)
	if res.Landing > 0 {
		res.MsgsPerSec = float64(res.Landed) / res.Landing.Seconds()
	}
	return nil
}
