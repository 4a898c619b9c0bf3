// Package localstack runs bqcdc and everything it talks to in one process,
// on 127.0.0.1 only: the BigQuery emulator (REST and Storage Write gRPC), a
// Pub/Sub emulator (pstest), a Confluent-compatible Schema Registry, the
// functions served by the Functions Framework, and a relay that delivers each
// subscription to the ingest function as Eventarc would.
package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"
	compactfn "github.com/bqcdc/bqcdc/functions/compact"
	ingestfn "github.com/bqcdc/bqcdc/functions/ingest"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/dev/registryserver"
	"github.com/bqcdc/bqcdc/internal/emulator"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/localopts"
	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/goccy/bigquery-emulator/server"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Options configure a stack. A port of 0 picks a free one. They live in
// package localopts, which the operator CLI parses `bqcdc local` with
// without linking the emulator.
type Options = localopts.Options

// DevReplayKey is the local stack's replay key when none is given: not a
// secret (it is in the source), for local use only. `bqcdc replay` against
// the local stack needs it in BQCDC_REPLAY_KEY.
const DevReplayKey = "bqcdc-local-replay-key-not-a-secret"

// DefaultOptions are the documented local ports.
func DefaultOptions() Options { return localopts.Default() }

const host = "127.0.0.1"

// Stack is a running local stack.
type Stack struct {
	Options
	Flows []*flow.Flow
	Bound []*flow.Bound // the flows bound to their changelog schemas by Apply
	// Golds are the materialized views of the flow files; BoundGolds those
	// Apply bound and created.
	Golds      []*flow.Gold
	BoundGolds []*flow.BoundGold

	BigQueryURL, StorageAddr, PubSubAddr, RegistryURL, FunctionURL string

	BigQuery *bigquery.Client
	PubSub   *pubsub.Client
	Registry *registryserver.Server
	BQConfig clients.Config
	Relays   []*Relay

	// The functions the stack serves, configured as in production.
	Ingest    *ingestfn.Function
	Compactor *compactfn.Function
	// Metrics holds both functions' measurements in memory, served as JSON
	// at FunctionURL/metrics (production exports them to Cloud Monitoring).
	Metrics *metrics.Provider

	dlWriter   *bqwrite.Writer // appends Pub/Sub dead letters (see drainDeadLetters)
	writerOnce sync.Once
	writerErr  error

	emulator     *server.Server
	pstest       *pstest.Server
	registryHTTP *http.Server
	cancel       context.CancelFunc
	wg           sync.WaitGroup
}

// The Functions Framework keeps a global registry and its server cannot be
// stopped, so one process serves the functions for one stack.
var frameworkStarted bool

// Start brings the stack up, creates a topic and subscription per flow source
// and applies the dataset and tables. Close releases it.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.MaxDeliveryAttempts == 0 {
		o.MaxDeliveryAttempts = 5
	}
	if len(o.ReplayKey) == 0 {
		o.ReplayKey = []byte(DevReplayKey)
	}
	if frameworkStarted {
		return nil, errors.New("a local stack already runs in this process (the Functions Framework serves one)")
	}
	// A refused flow is logged and skipped: the stack serves the others.
	d, refused := flow.ParseDirAll(o.FlowsDir)
	for _, err := range refused {
		o.Log.Warn("flow refused: the stack serves the other flows", "error", err.Error())
	}
	if len(d.Flows) == 0 {
		return nil, errors.Join(refused...)
	}
	s := &Stack{Options: o, Flows: d.Flows, Golds: d.Golds}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.startBigQuery(ctx); err != nil {
		return nil, err
	}
	if err := s.startPubSub(ctx); err != nil {
		return nil, err
	}
	if err := s.startRegistry(); err != nil {
		return nil, err
	}
	if err := s.startFunctions(ctx); err != nil {
		return nil, err
	}
	if err := s.Apply(ctx); err != nil {
		return nil, err
	}
	if err := s.startRelays(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func addr(port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// freePort checks that port can be bound on 127.0.0.1 (or picks one for 0),
// so a clash is reported by name instead of as a panic inside a library.
func freePort(what string, port int) (int, error) {
	l, err := net.Listen("tcp", addr(port))
	if err != nil {
		return 0, fmt.Errorf("%s: port %d on %s is not free (choose another with its flag): %w", what, port, host, err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return p, nil
}

func (s *Stack) startBigQuery(ctx context.Context) error {
	em, err := server.New(server.TempStorage)
	if err != nil {
		return fmt.Errorf("starting BigQuery emulator: %w", err)
	}
	s.emulator = em
	em.Handler = emulator.WrapREST(em.Handler)
	if err := em.SetProject(s.Project); err != nil {
		return fmt.Errorf("starting BigQuery emulator: %w", err)
	}
	ready := make(chan [2]string, 1)
	em.SetListenCallback(func(h, g string) { ready <- [2]string{h, g} })
	errc := make(chan error, 1)
	go func() { errc <- em.Serve(context.WithoutCancel(ctx), addr(s.BigQueryPort), addr(s.StoragePort)) }()
	select {
	case a := <-ready:
		s.BigQueryURL, s.StorageAddr = "http://"+a[0], a[1]
	case err := <-errc:
		return fmt.Errorf("BigQuery emulator on %s / %s: %w", addr(s.BigQueryPort), addr(s.StoragePort), err)
	case <-time.After(30 * time.Second):
		return errors.New("BigQuery emulator did not start within 30 s")
	}
	emulator.Gate(s.StorageAddr)
	s.BQConfig = clients.Config{Project: s.Project, Endpoint: s.BigQueryURL, StorageEndpoint: s.StorageAddr}
	s.BigQuery, err = clients.NewBigQuery(ctx, s.BQConfig)
	return err
}

func (s *Stack) startPubSub(ctx context.Context) error {
	port, err := freePort("Pub/Sub emulator", s.PubSubPort)
	if err != nil {
		return err
	}
	s.pstest = pstest.NewServerWithAddress(addr(port))
	s.PubSubAddr = s.pstest.Addr
	conn, err := grpc.NewClient(s.PubSubAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("dialing Pub/Sub emulator: %w", err)
	}
	s.PubSub, err = pubsub.NewClient(ctx, s.Project, option.WithGRPCConn(conn))
	return err
}

func (s *Stack) startRegistry() error {
	l, err := net.Listen("tcp", addr(s.RegistryPort))
	if err != nil {
		return fmt.Errorf("schema registry: port %d on %s is not free: %w", s.RegistryPort, host, err)
	}
	s.Registry = registryserver.New()
	s.RegistryURL = "http://" + l.Addr().String()
	s.registryHTTP = &http.Server{Handler: s.Registry, ReadHeaderTimeout: 10 * time.Second}
	go s.registryHTTP.Serve(l)
	return nil
}

// Config is the functions' configuration for this stack: what Terraform
// sets as environment variables in production, pointing at the local
// services.
func (s *Stack) Config() config.Config {
	return config.Config{
		BigQuery: s.BQConfig, Dataset: s.Dataset, RegistryURL: s.RegistryURL,
		VisibilityLag: s.VisibilityLag, TombstoneRetentionDays: config.DefaultTombstoneRetention,
		PubSubEndpoint: s.PubSubAddr, // Pub/Sub schema revisions come from pstest's schema service
		ReplayKey:      s.ReplayKey,
		AppendLedger:   true, // the environment's default (config.FromEnv)
	}
}

// startFunctions builds both functions from the stack's configuration, as
// their entry points build them from the environment in production, and
// serves them with the Functions Framework: Ingest under /Ingest/, so the
// relay can post to /Ingest/projects/P/topics/T as a push subscription
// posts to its endpoint, and Compact at /Compact.
func (s *Stack) startFunctions(ctx context.Context) error {
	port, err := freePort("functions", s.FunctionPort)
	if err != nil {
		return err
	}
	cfg := s.Config()
	if s.Metrics, err = metrics.Start(ctx, metrics.Config{Exporter: metrics.ExportMemory}); err != nil {
		return err
	}
	if s.Ingest, err = ingestfn.New(ctx, cfg, ingestfn.Options{Flows: s.Flows, Log: s.Log, Metrics: s.Metrics}); err != nil {
		return err
	}
	if s.Compactor, err = compactfn.New(ctx, cfg, compactfn.Options{Flows: s.Flows, Golds: s.Golds, Log: s.Log, Metrics: s.Metrics, LedgerSettle: s.LedgerSettle}); err != nil {
		return err
	}
	if err := funcframework.RegisterHTTPFunctionContext(ctx, "/metrics", s.Metrics.Handler().ServeHTTP); err != nil {
		return err
	}
	if err := funcframework.RegisterHTTPFunctionContext(ctx, "/"+ingestfn.EntryPoint+"/", s.Ingest.ServeHTTP); err != nil {
		return err
	}
	if err := funcframework.RegisterHTTPFunctionContext(ctx, "/"+compactfn.EntryPoint, s.Compactor.ServeHTTP); err != nil {
		return err
	}
	os.Unsetenv("FUNCTION_TARGET") // serve every registered function at its path
	frameworkStarted = true
	errc := make(chan error, 1)
	go func() { errc <- funcframework.StartHostPort(host, strconv.Itoa(port)) }()
	s.FunctionURL = "http://" + addr(port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-errc:
			return fmt.Errorf("functions framework on %s: %w", addr(port), err)
		default:
		}
		if c, err := net.Dial("tcp", addr(port)); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("functions framework did not start within 10 s")
}

// ApplyOptions are the apply options for the emulator: no table functions
// (internal/emulator, concession 11).
var ApplyOptions = apply.Options{SkipTableFunctions: true}

// Apply creates the dataset and the tables of every flow, as `bqcdc apply`
// does against BigQuery, taking schemas from the local registry or the
// schemas folder.
func (s *Stack) Apply(ctx context.Context) error {
	var rep apply.Report
	reg := registry.New(s.RegistryURL, registry.Options{})
	lister, err := clients.NewTableLister(ctx, s.BQConfig)
	if err != nil {
		return err
	}
	opts := ApplyOptions
	opts.Lister = lister
	opts.StatusWithGolds = len(s.Golds) > 0
	bound, err := apply.AllWith(ctx, s.BigQuery, apply.Target{Project: s.Project, Dataset: s.Dataset}, s.Flows,
		apply.Schemas{Dir: s.SchemasDir, Registry: reg}, opts, &rep)
	s.Bound = bound
	if len(s.Golds) > 0 && (err == nil || errors.As(err, new(*flow.Error))) {
		golds, refused := flow.BindGolds(s.Golds, bound, s.Dataset)
		s.BoundGolds = golds
		err = errors.Join(err, refused)
		if gerr := apply.Golds(ctx, s.BigQuery, s.Location(), bound, golds, opts, &rep); gerr != nil {
			return gerr
		}
	}
	// Terraform creates this table in production.
	if perr := apply.PubSubDeadLetters(ctx, s.BigQuery, s.Dataset, &rep); perr != nil {
		return perr
	}
	for _, line := range rep {
		s.Log.Info("apply", "done", line)
	}
	if errors.As(err, new(*flow.Error)) {
		// Flows that do not bind were skipped; the others are applied.
		s.Log.Warn("flows refused: the stack serves the other flows", "error", err.Error())
		return nil
	}
	return err
}

// Compact calls the Compact function over HTTP, as Cloud Scheduler does,
// for the named flows (all when none).
func (s *Stack) Compact(ctx context.Context, flows []string) ([]compact.Report, error) {
	body, _ := json.Marshal(map[string][]string{"flows": flows})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.FunctionURL+"/"+compactfn.EntryPoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling the Compact function: %w", err)
	}
	defer resp.Body.Close()
	var out compactfn.Response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding the Compact function's answer (%s): %w", resp.Status, err)
	}
	if out.Error != "" {
		return out.Reports, fmt.Errorf("Compact function: %s", out.Error)
	}
	return out.Reports, nil
}

// Location is where the stack keeps flow objects.
func (s *Stack) Location() catalog.Location {
	return catalog.Location{Project: s.Project, DefaultDataset: s.Dataset}
}

// Topics and subscriptions per source.
func SubscriptionName(topic string) string { return topic + "-bqcdc" }
func DeadLetterTopic(topic string) string  { return topic + "-dead-letter" }

// every calls f every period, in a goroutine Close waits for, until ctx is
// done.
func (s *Stack) every(ctx context.Context, period time.Duration, f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f()
			}
		}
	}()
}

func (s *Stack) startRelays(ctx context.Context) error {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	if s.CompactEvery > 0 {
		s.every(rctx, s.CompactEvery, func() {
			reports, err := s.Compact(rctx, nil)
			if s.OnCompaction != nil && rctx.Err() == nil {
				s.OnCompaction(reports, err)
			}
		})
	}
	if s.PurgeJobsEvery > 0 {
		s.every(rctx, s.PurgeJobsEvery, func() { s.purgeJobsLogged(rctx) })
	}
	if s.FunctionConcurrency <= 0 {
		s.FunctionConcurrency = 80
	}
	slots := make(chan struct{}, s.FunctionConcurrency)
	for _, topic := range flow.Sources(s.Flows) {
		if err := s.createTopic(ctx, topic); err != nil {
			return err
		}
		dlq := DeadLetterTopic(topic)
		if err := s.createTopic(ctx, dlq); err != nil {
			return err
		}
		// As in production, a BigQuery subscription drains the dead-letter
		// topic into pubsub_dead_letters: nothing Pub/Sub gives up on is lost.
		if err := s.createSubscription(ctx, dlq, dlq+"-bigquery", nil); err != nil {
			return err
		}
		drain := s.PubSub.Subscriber(dlq + "-bigquery")
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.drainDeadLetters(rctx, drain); err != nil && rctx.Err() == nil {
				s.Log.Error("dead-letter drain stopped", "topic", dlq, "error", err.Error())
			}
		}()
		sub := SubscriptionName(topic)
		// pstest forwards a message past its policy's attempts to the
		// dead-letter topic but never acknowledges it on the source
		// subscription, so it forwards it again on every pull (hundreds of
		// copies a second). Its policy is set out of reach (it still counts
		// the attempts) and the relay forwards at MaxDeliveryAttempts, as
		// Pub/Sub does: see package emulator, concession 10.
		policy := &pb.DeadLetterPolicy{DeadLetterTopic: s.topicPath(dlq), MaxDeliveryAttempts: 100}
		if err := s.createSubscription(ctx, topic, sub, policy); err != nil {
			return err
		}
		r := &Relay{Project: s.Project, Topic: topic, Subscription: sub, URL: s.FunctionURL + "/" + ingestfn.EntryPoint + "/",
			HTTP: &http.Client{Timeout: 60 * time.Second}, Log: s.Log, MaxBackoff: 2 * time.Second, Slots: slots,
			MaxDeliveryAttempts: s.MaxDeliveryAttempts, DeadLetters: s.PubSub.Publisher(dlq)}
		s.Relays = append(s.Relays, r)
		subscriber := s.PubSub.Subscriber(sub)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := r.Run(rctx, subscriber); err != nil && rctx.Err() == nil {
				s.Log.Error("relay stopped", "topic", topic, "error", err.Error())
			}
		}()
	}
	return nil
}

func (s *Stack) topicPath(t string) string { return fmt.Sprintf("projects/%s/topics/%s", s.Project, t) }

func (s *Stack) createTopic(ctx context.Context, t string) error {
	_, err := s.PubSub.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: s.topicPath(t)})
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", t, err)
	}
	return nil
}

func (s *Stack) createSubscription(ctx context.Context, topic, name string, dlq *pb.DeadLetterPolicy) error {
	_, err := s.PubSub.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name: fmt.Sprintf("projects/%s/subscriptions/%s", s.Project, name), Topic: s.topicPath(topic),
		AckDeadlineSeconds: 60, DeadLetterPolicy: dlq,
	})
	if err != nil {
		return fmt.Errorf("creating subscription %s: %w", name, err)
	}
	return nil
}

// Close stops what can be stopped (the Functions Framework cannot).
func (s *Stack) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.PubSub != nil {
		s.PubSub.Close()
	}
	if s.pstest != nil {
		s.pstest.Close()
	}
	if s.registryHTTP != nil {
		s.registryHTTP.Close()
	}
	if s.dlWriter != nil {
		s.dlWriter.Close()
	}
	if s.BigQuery != nil {
		s.BigQuery.Close()
	}
	if s.emulator != nil {
		// A graceful stop waits for every open Storage Write stream, and the
		// ingest function keeps its streams open for the life of the process.
		done := make(chan struct{})
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			s.emulator.Stop(ctx)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			s.emulator.Close()
		}
	}
}
