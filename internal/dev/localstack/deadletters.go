package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/loadgen"
	"github.com/bqcdc/bqcdc/internal/registry"
)

// drainDeadLetters writes every message of a dead-letter subscription to
// pubsub_dead_letters, as the BigQuery subscription Terraform declares does
// in production (write_metadata = true: subscription, message id, publish
// time, data, attributes as JSON). A message is acknowledged only once its
// row is appended.
func (s *Stack) drainDeadLetters(ctx context.Context, sub *pubsub.Subscriber) error {
	w, err := s.writer(ctx)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("projects/%s/subscriptions/%s", s.Project, sub.ID())
	return sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		attrs, _ := json.Marshal(m.Attributes)
		row := map[string]any{"subscription_name": name, "message_id": m.ID, "publish_time": m.PublishTime.UnixMicro(),
			"data": m.Data, "attributes": string(attrs)}
		if err := w.Append(ctx, catalog.PubSubDeadLetterTable, []map[string]any{row}); err != nil {
			s.Log.Warn("dead letter not stored yet, will retry", "message_id", m.ID, "error", err.Error())
			m.Nack()
			return
		}
		m.Ack()
	})
}

// writer is the stack's own Storage Write client (for the dead-letter
// drain), created once.
func (s *Stack) writer(ctx context.Context) (*bqwrite.Writer, error) {
	s.writerOnce.Do(func() {
		mw, err := clients.NewWriter(context.WithoutCancel(ctx), s.BQConfig)
		if err != nil {
			s.writerErr = err
			return
		}
		s.dlWriter = bqwrite.NewWriter(s.BigQuery, mw, s.Project, s.Dataset)
	})
	return s.dlWriter, s.writerErr
}

// LoadTarget is the stack as a target of bqcdc loadgen.
func (s *Stack) LoadTarget(progress io.Writer) loadgen.Target {
	return loadgen.Target{PubSub: s.PubSub, Registry: registry.New(s.RegistryURL, registry.Options{}), BigQuery: s.BigQuery,
		Dataset: s.Dataset, Progress: progress}
}

// CheckViews compares every flow's view with the reference model of its
// changelog as it is now; it returns the differences ("" when none).
func (s *Stack) CheckViews(ctx context.Context) (string, error) {
	return viewcheck.Flows(ctx, s.BigQuery, s.Location(), s.Flows)
}

// StartLoad starts a stack serving the flows of a synthetic load (one
// current-state flow per table), on free ports unless o names them. Close
// the stack, then call the returned cleanup.
func StartLoad(ctx context.Context, s loadgen.Spec, o Options) (*Stack, func(), error) {
	dir, err := os.MkdirTemp("", "bqcdc-loadgen-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := s.Write(dir); err != nil {
		cleanup()
		return nil, nil, err
	}
	o.FlowsDir, o.SchemasDir = filepath.Join(dir, "flows"), filepath.Join(dir, "schemas")
	st, err := Start(ctx, o)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return st, cleanup, nil
}
