// Package ingest is the Cloud Run function that receives Pub/Sub messages as
// CloudEvents (google.cloud.pubsub.topic.v1.messagePublished) and appends
// each to its source's changelog table. In production a push subscription per
// topic posts the plain push body, which the Functions Framework converts to
// that CloudEvent; Eventarc delivers the same event in binary mode, as the
// local relay does.
//
// The entry point is "Ingest". Returning nil acknowledges the message; an
// error makes Pub/Sub redeliver it, which the function does only for failures
// a retry can fix (see internal/ingest).
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigquery"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/bqclient"
	"github.com/bqcdc/bqcdc/internal/bqschema"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/ingest"
	"github.com/bqcdc/bqcdc/internal/logging"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/sql/render"
	"github.com/cloudevents/sdk-go/v2/event"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// EntryPoint is the name the function is registered and deployed under.
const EntryPoint = "Ingest"

func init() {
	// Registration only: clients are created on the first event, so an
	// instance that serves the other function pays nothing for this one.
	functions.CloudEvent(EntryPoint, Handle)
}

var (
	once    sync.Once
	service *ingest.Service
	initErr error
)

// Service returns the process-wide pipeline, creating it from the
// environment on first use.
func Service(ctx context.Context) (*ingest.Service, error) {
	once.Do(func() {
		cfg, err := config.FromEnv()
		if err != nil {
			initErr = fmt.Errorf("configuring ingest: %w", err)
			return
		}
		// Clients outlive the first request.
		ctx := context.WithoutCancel(ctx)
		bq, err := bqclient.NewBigQuery(ctx, cfg.BigQuery)
		if err != nil {
			initErr = err
			return
		}
		mw, err := bqclient.NewWriter(ctx, cfg.BigQuery)
		if err != nil {
			initErr = err
			return
		}
		// Without a registry URL, Confluent-framed messages are
		// dead-lettered with that reason; Pub/Sub schema-encoded Avro and
		// Debezium JSON with its schema still flow.
		var reg ingest.SchemaSource
		if cfg.RegistryURL != "" {
			reg = registry.New(cfg.RegistryURL, registry.Options{Username: cfg.RegistryUsername, Password: cfg.RegistryPassword})
		}
		schemas, err := pubsubSchemaClient(ctx)
		if err != nil {
			initErr = err
			return
		}
		log := logging.New(os.Stdout)
		log.Info("ingest configured", "config", cfg.Redacted())
		service = ingest.New(reg, bqwrite.NewWriter(bq, mw, cfg.BigQuery.Project, cfg.Dataset), log)
		service.UsePubSubSchemas(formats.NewPubSubSchemas(schemas))
		// Ingest does not need the flows to store messages; the views of
		// refused flows (or of all, when none loads) follow a changelog's new
		// columns at the next compaction run.
		flows, refused := flow.Load(os.Getenv(config.EnvFlowsDir), builtin)
		for _, err := range refused {
			log.Warn("flow refused: its view will not follow new changelog columns", "event", "flow_refused", "error", err.Error())
		}
		if len(flows) > 0 {
			loc := render.Location{Project: cfg.BigQuery.Project, DefaultDataset: cfg.Dataset}
			service.OnEvolved(followFlows(bq, loc, flows, log))
			service.UseKeys(flowKeys(flows))
		}
		service.FreezeSchema(cfg.SchemaEvolutionOff...)
	})
	return service, initErr
}

var builtin fs.FS // set by the deployable root package: sql/flows embedded

// UseFlows sets the flow files built into the function (the root package
// embeds sql/flows and calls it from init).
func UseFlows(files fs.FS) { builtin = files }

// flowKeys lists, by source topic, the KEYS columns of every flow reading it.
func flowKeys(flows []*flow.Flow) map[string][]string {
	keys := map[string][]string{}
	for _, f := range flows {
		for _, k := range f.Keys {
			if !slices.Contains(keys[f.Source.Name], k.Name) {
				keys[f.Source.Name] = append(keys[f.Source.Name], k.Name)
			}
		}
	}
	return keys
}

// followFlows brings the state tables and views of a topic's flows up to its
// changelog after ingest added columns, so views show them at once. It uses
// table metadata only (apply.FollowChangelog), which the function's
// dataset-level role allows.
func followFlows(bq *bigquery.Client, loc render.Location, flows []*flow.Flow, log *slog.Logger) func(context.Context, string, *bqwrite.Table) error {
	return func(ctx context.Context, topic string, t *bqwrite.Table) error {
		mine := flow.ForSource(flows, topic)
		if len(mine) == 0 {
			return nil
		}
		bound, refused := apply.Bind(mine, map[string]apply.SourceSchema{topic: {Source: topic, Columns: bqschema.FromBigQuery(t.Metadata.Schema)}})
		errs := []error{refused} // the flows that bind still follow
		for _, b := range bound {
			var rep apply.Report
			if err := apply.FollowChangelog(ctx, bq, loc, b, &rep); err != nil {
				errs = append(errs, fmt.Errorf("flow %s: %w", b.Name, err))
				continue
			}
			log.Info("flow follows its evolved changelog", "event", "flow_evolved", "flow", b.Name, "report", strings.Join(rep, "; "))
		}
		return errors.Join(errs...)
	}
}

// pubsubSchemaClient connects to Pub/Sub's schema service, or to the
// emulator named by PUBSUB_EMULATOR_HOST (as the Pub/Sub client does).
func pubsubSchemaClient(ctx context.Context) (*pubsubapi.SchemaClient, error) {
	var opts []option.ClientOption
	if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
		opts = append(opts, option.WithEndpoint(host), option.WithoutAuthentication(),
			option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	}
	c, err := pubsubapi.NewSchemaClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the Pub/Sub schema client: %w", err)
	}
	return c, nil
}

// PushBody is the data of a messagePublished CloudEvent: what Pub/Sub
// pushes, and what the local relay sends.
type PushBody struct {
	Message struct {
		Data        []byte            `json:"data,omitempty"`
		Attributes  map[string]string `json:"attributes,omitempty"`
		MessageID   string            `json:"messageId"`
		PublishTime time.Time         `json:"publishTime"`
		OrderingKey string            `json:"orderingKey,omitempty"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// Handle is the CloudEvent entry point.
func Handle(ctx context.Context, e event.Event) error {
	svc, err := Service(ctx)
	if err != nil {
		return err // misconfigured: keep every message until it is fixed
	}
	msg, err := Decode(e)
	if err != nil {
		// The event itself is malformed; keep its raw body as the dead letter.
		_, err = svc.DeadLetter(ctx, msg, failure.Permanent(failure.StageEvent, err))
		return err
	}
	if _, err := svc.Handle(ctx, msg); err != nil {
		// Handle logged the details; the framework logs what is returned, so
		// keep it short (BigQuery errors can quote row values).
		return fmt.Errorf("message %s will be redelivered: %s", msg.MessageID, ingest.Truncate(err.Error()))
	}
	return nil
}

// Decode extracts the Pub/Sub message from a CloudEvent. On error the
// returned message still carries what could be read (topic, id, raw body).
func Decode(e event.Event) (ingest.Message, error) {
	msg := ingest.Message{Topic: TopicOf(e.Source()), MessageID: e.ID(), Data: e.Data()}
	var d PushBody
	if err := json.Unmarshal(e.Data(), &d); err != nil {
		return msg, fmt.Errorf("decoding Pub/Sub push body: %w", err)
	}
	if d.Message.MessageID == "" && d.Message.Data == nil && d.Message.Attributes == nil {
		return msg, fmt.Errorf("push body has no message")
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
		return msg, fmt.Errorf("event source %q names no Pub/Sub topic", e.Source())
	}
	return msg, nil
}

// TopicOf extracts the topic id from an event source such as
// //pubsub.googleapis.com/projects/p/topics/t.
func TopicOf(source string) string {
	const marker = "/topics/"
	i := strings.LastIndex(source, marker)
	if i < 0 {
		return ""
	}
	return source[i+len(marker):]
}
