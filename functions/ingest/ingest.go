// Package ingest is the Cloud Run function that Pub/Sub push subscriptions
// call with each message of a source topic; it appends the message to the
// source's changelog table (see internal/ingest for the pipeline).
//
// It is a thin shell: configuration in (config.Config, from the environment
// when deployed, built directly by the local stack), one constructor, and an
// HTTP handler that reads Pub/Sub's push body. It reads the push body itself
// rather than letting the Functions Framework turn it into a CloudEvent: the
// framework's conversion drops the ordering key, the subscription and the
// delivery attempt, and parses the body twice more. An Eventarc binary-mode
// CloudEvent (ce-* headers, the same body) is accepted as well.
//
// The answer is what Pub/Sub acts on: 204 acknowledges the message (stored
// as a changelog row or a dead letter, or counted as a tombstone); any
// other status makes Pub/Sub redeliver it, which the function asks for only
// for failures a retry can fix.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/bqcdc/bqcdc/internal/appends"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/ingest"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/logging"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/pubsubschema"
	"github.com/bqcdc/bqcdc/internal/registry"
	"golang.org/x/sync/semaphore"
)

// EntryPoint is the name the function is registered and deployed under.
const EntryPoint = "Ingest"

// MaxBody bounds the push body read: Pub/Sub messages are at most 10 MB,
// which base64 makes 13.4 MB, plus attributes and the JSON around them.
const MaxBody = 16 << 20

// MaxMemoryInFlight bounds what the requests one instance serves at once
// may hold, so that a high request concurrency (Terraform's default is 80)
// cannot add up to more memory than the instance has when large or costly
// messages arrive together: requests beyond it wait for memory, not for
// CPU. A request weighs its push body plus the decoded-size budget of a
// message that size (limits.DecodeBudget), which decoding it may not exceed
// (it is refused, a dead letter at stage decode): the body's bytes alone
// do not bound what decoding costs, 80-100 times the payload for 1-byte
// array items. A typical event of a few KB weighs about 0.5 MiB, so 80 of
// them take 40 MiB; the largest message weighs 80 MiB.
//
// 192 MiB fits Terraform's default instance of 512 MiB: with Go's default
// GC target (GOGC=100: the heap may grow to twice what was live at the last
// collection) and about 30 MiB of clients, caches and runtime, the heap
// stays under 2 × (192 + 30) = 444 MiB. TestDecodedSizeIsBounded (package
// internal/ingest) checks that a message allocates no more than its budget.
const MaxMemoryInFlight = 192 << 20

// Register registers the entry point with the Functions Framework. The
// function configures itself from the environment on its first request (so
// an instance that serves the other function pays nothing for this one),
// with builtin as its flows unless BQCDC_FLOWS_DIR names others.
func Register(builtin fs.FS) {
	functions.HTTP(EntryPoint, fromEnv(builtin))
}

// fromEnv returns a handler that builds the function from the environment
// on first use (answering 500 until it can, so Pub/Sub keeps every message).
func fromEnv(builtin fs.FS) http.HandlerFunc {
	fn := config.NewLazy(func(ctx context.Context, cfg config.Config) (*Function, error) {
		log := logging.New(os.Stdout)
		// Ingest does not need the flows to store messages; a refused
		// flow is reported and the others served.
		flows, refused := flow.Load(cfg.FlowsDir, builtin)
		for _, err := range refused {
			log.Warn("flow refused: its view will not follow new changelog columns", "event", "flow_refused", "error", err.Error())
		}
		mp, err := metrics.Start(ctx, metrics.Config{Exporter: cfg.MetricsExporter, Interval: cfg.MetricsInterval,
			Project: cfg.BigQuery.Project, Service: "bqcdc-ingest", Log: log})
		if err != nil {
			return nil, fmt.Errorf("starting metrics: %w", err)
		}
		return New(ctx, cfg, Options{Flows: flows, Log: log, Metrics: mp})
	})
	return func(w http.ResponseWriter, r *http.Request) {
		f, err := fn.Get(r.Context())
		if err != nil {
			http.Error(w, "configuring ingest: "+err.Error(), http.StatusInternalServerError)
			return
		}
		f.ServeHTTP(w, r)
	}
}

// Options are what New needs besides the configuration.
type Options struct {
	// Flows are the flows deployed: ingest refuses a writer schema without
	// one of their KEYS columns, and brings their views along when it adds
	// columns to a changelog.
	Flows []*flow.Flow
	// Log receives the function's structured logs; nil means JSON on stdout.
	Log *slog.Logger
	// Metrics receives the pipeline's measurements (messages by outcome,
	// lag, decode and append times); nil measures nothing.
	Metrics *metrics.Provider
}

// Function is the ingest function of one instance.
type Function struct {
	svc    *ingest.Service
	log    *slog.Logger
	memory *semaphore.Weighted // bytes requests in flight may hold (MaxMemoryInFlight)
}

// New creates the function's clients and pipeline. Clients connect lazily;
// nothing here waits on the network.
func New(ctx context.Context, cfg config.Config, o Options) (*Function, error) {
	if o.Log == nil {
		o.Log = logging.New(os.Stdout)
	}
	ctx = context.WithoutCancel(ctx) // clients outlive the first request
	bq, mw, err := clients.NewAppendClients(ctx, cfg.BigQuery)
	if err != nil {
		return nil, err
	}
	schemas, err := clients.NewPubSubSchemas(ctx, cfg.PubSubEndpoint)
	if err != nil {
		return nil, err
	}
	// A schema name is an attribute any publisher sets: one in another
	// project fails with PermissionDenied, which would be retried until
	// Pub/Sub gives up. Only the deployment's own project is read, so such
	// a message is dead-lettered at once (stage registry), without a fetch.
	writer := bqwrite.NewWriter(bq, mw, cfg.BigQuery.Project, cfg.Dataset)
	writer.Metrics = o.Metrics.Recorder()
	opts := ingest.Options{
		Writer:        writer,
		Metrics:       o.Metrics.Recorder(),
		PubSubSchemas: pubsubschema.New(schemas).OnlyProjects(cfg.BigQuery.Project),
		Keys:          flow.KeysBySource(o.Flows),
		Frozen:        cfg.SchemaEvolutionOff,
		Log:           o.Log,
		ReplayKey:     cfg.ReplayKey,
		LogValues:     cfg.LogValues,
	}
	// Without a registry URL, Confluent-framed messages are dead-lettered
	// with that reason; Pub/Sub schema-encoded Avro and Debezium JSON with
	// its schema still flow.
	if cfg.AppendLedger {
		opts.Ledger = appends.New(writer, appends.Options{Log: o.Log})
	}
	if cfg.RegistryURL != "" {
		opts.Registry = registry.New(cfg.RegistryURL, registry.Options{Username: cfg.RegistryUsername, Password: cfg.RegistryPassword})
	}
	if len(o.Flows) > 0 {
		loc := catalog.Location{Project: cfg.BigQuery.Project, DefaultDataset: cfg.Dataset}
		opts.Flows = apply.NewFollower(bq, loc, o.Flows, o.Log)
	}
	o.Log.Info("ingest configured", "config", cfg.Redacted(), "flows", len(o.Flows))
	return &Function{svc: ingest.New(opts), log: o.Log, memory: semaphore.NewWeighted(MaxMemoryInFlight)}, nil
}

// Stats returns the pipeline's counters.
func (f *Function) Stats() ingest.Stats { return f.svc.Stats() }

// ServeHTTP handles one push request.
func (f *Function) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	size := r.ContentLength
	if size < 0 || size > MaxBody {
		size = MaxBody // unknown (or a lie, which ReadPush refuses): assume the worst
	}
	weight := RequestWeight(size)
	if err := f.memory.Acquire(r.Context(), weight); err != nil {
		http.Error(w, "request ended while waiting for memory: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer f.memory.Release(weight)
	msg, err := ReadPush(r)
	if err == nil {
		_, err = f.svc.Handle(r.Context(), msg)
	} else {
		// The request itself is malformed; keep its raw body as the dead letter.
		_, err = f.svc.DeadLetter(r.Context(), msg, failure.Permanent(failure.StageEvent, err))
	}
	if err != nil {
		// Handle logged the details; keep the answer short (BigQuery errors
		// can quote row values).
		http.Error(w, fmt.Sprintf("message %s will be redelivered: %s", msg.MessageID, ingest.Truncate(f.svc.Reason(err))), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// RequestWeight is what a push request of size bytes weighs in the
// in-flight semaphore: its body, and the decoded-size budget of a message
// that large (the message is smaller than its base64 body, and the budget
// grows with the size, so this covers it).
func RequestWeight(size int64) int64 {
	return size + limits.DecodeBudget(int(min(size, MaxBody)))
}

// PushBody is what a Pub/Sub push subscription posts (the wrapped format),
// and the data of an Eventarc messagePublished CloudEvent.
type PushBody struct {
	Message struct {
		Data        []byte            `json:"data,omitempty"`
		Attributes  map[string]string `json:"attributes,omitempty"`
		MessageID   string            `json:"messageId"`
		PublishTime time.Time         `json:"publishTime"`
		OrderingKey string            `json:"orderingKey,omitempty"`
	} `json:"message"`
	Subscription    string `json:"subscription"`
	DeliveryAttempt int    `json:"deliveryAttempt,omitempty"`
}

// topicInPath finds the topic in a push endpoint's path, which ends in
// /projects/PROJECT/topics/TOPIC (Terraform sets it so), or in an Eventarc
// source (//pubsub.googleapis.com/projects/PROJECT/topics/TOPIC).
var topicInPath = regexp.MustCompile(`/projects/[^/]+/topics/([^/?]+)/?$`)

// ReadPush reads the message of a push request. On error the returned
// message still carries what could be read (topic, id, raw body).
func ReadPush(r *http.Request) (ingest.Message, error) {
	var msg ingest.Message
	source := r.Header.Get("Ce-Source")
	if source == "" {
		// The path as sent, not percent-decoded: /topics/a%2Eb names the
		// topic a%2Eb (a valid Pub/Sub name), not a.b, whose changelog it
		// must not reach. A topic named with '%' is thus never matched by a
		// push path; Terraform's sources allow no '%'.
		source = r.URL.EscapedPath()
	}
	if m := topicInPath.FindStringSubmatch(source); m != nil {
		msg.Topic = m[1]
	}
	msg.MessageID = r.Header.Get("Ce-Id")
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxBody))
	msg.Data = body
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return msg, fmt.Errorf("push body larger than %d bytes (Pub/Sub messages are at most 10 MB)", MaxBody)
		}
		return msg, fmt.Errorf("reading the push body: %w", err)
	}
	var d PushBody
	if err := json.Unmarshal(body, &d); err != nil {
		return msg, fmt.Errorf("decoding the Pub/Sub push body: %w", err)
	}
	if d.Message.MessageID == "" && d.Message.Data == nil && d.Message.Attributes == nil {
		return msg, errors.New("push body has no message")
	}
	msg.Data = d.Message.Data
	msg.Attributes = d.Message.Attributes
	msg.PublishTime = d.Message.PublishTime
	msg.OrderingKey = d.Message.OrderingKey
	msg.Subscription = d.Subscription
	if d.Message.MessageID != "" {
		msg.MessageID = d.Message.MessageID
	}
	if msg.Topic == "" {
		return msg, fmt.Errorf("request path %q names no Pub/Sub topic: the push endpoint must end in /projects/PROJECT/topics/TOPIC", r.URL.EscapedPath())
	}
	return msg, nil
}
