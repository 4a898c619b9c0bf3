package formats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	pubsub "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/hamba/avro/v2"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Pub/Sub's two schema encodings, as googclient_schemaencoding names them.
const (
	EncodingBinary = "BINARY"
	EncodingJSON   = "JSON"
)

// fetchTimeout bounds one schema fetch, which runs detached from the
// context of the message that started it (others may be waiting on it).
const fetchTimeout = 60 * time.Second

// PubSubSchemas looks up the Avro schema revisions named by Pub/Sub's
// googclient_schema* attributes and decodes messages written with them. It
// is safe for concurrent use.
//
// A revision is immutable, so a fetched one is cached for the life of the
// process, once per revision (concurrent first lookups share one fetch).
// Failures are not cached: the next message asks again.
type PubSubSchemas struct {
	client   *pubsub.SchemaClient
	projects map[string]bool // the projects whose schemas may be fetched; nil: any
	mu       sync.RWMutex
	revs     map[string]*revision // by projects/p/schemas/s@rev
	group    singleflight.Group
}

// OnlyProjects restricts the schemas Lookup fetches to those of the given
// projects (the deployment's own). The schema name is an attribute any
// publisher sets: without the restriction, a name in a project the function
// cannot read fails with PermissionDenied, which is retried (it usually
// means a missing role) until Pub/Sub gives up. With it, a name in another
// project is refused at once, permanently, without a fetch. Call it before
// the first Lookup.
func (s *PubSubSchemas) OnlyProjects(projects ...string) *PubSubSchemas {
	s.projects = map[string]bool{}
	for _, p := range projects {
		s.projects[p] = true
	}
	return s
}

// revision holds one schema revision's Writers, one per encoding; they share
// the parsed schema.
type revision struct{ binary, json *Writer }

// NewPubSubSchemas returns a cache fetching from c, the Pub/Sub schema admin
// client (cloud.google.com/go/pubsub/v2/apiv1 NewSchemaClient; it needs
// roles/pubsub.viewer on the schemas). The caller keeps c open.
func NewPubSubSchemas(c *pubsub.SchemaClient) *PubSubSchemas {
	return &PubSubSchemas{client: c, revs: map[string]*revision{}}
}

// Lookup returns the Writer for a message delivered from a topic with a
// schema, chosen by its attributes (schema name, revision id, encoding).
//
// Errors are classified at the registry stage. Permanent: attributes missing
// or unknown, a revision that does not exist (NotFound; revisions are
// immutable and a deleted one never returns), a schema that is not Avro, an
// Avro definition that does not parse or is not a record. Retryable:
// everything else, notably Unavailable, DeadlineExceeded, PermissionDenied
// (see OnlyProjects for names in other projects)
// (a deployment problem: keep the message until it is fixed) and a cancelled
// context.
func (s *PubSubSchemas) Lookup(ctx context.Context, attrs map[string]string) (*Writer, error) {
	name, rev, enc := attrs[AttrSchemaName], attrs[AttrSchemaRevision], attrs[AttrSchemaEncoding]
	switch {
	case name == "":
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message has no %s attribute", AttrSchemaName))
	case rev == "":
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message names schema %s but has no %s attribute", name, AttrSchemaRevision))
	case enc != EncodingBinary && enc != EncodingJSON:
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message has %s=%q, want %s or %s", AttrSchemaEncoding, clip(enc), EncodingBinary, EncodingJSON))
	}
	if s.projects != nil {
		project, ok := strings.CutPrefix(name, "projects/")
		if project, _, _ = strings.Cut(project, "/"); !ok || !s.projects[project] {
			return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message names schema %q, which is not in a project this function reads schemas from", clip(name)))
		}
	}
	r, err := s.revision(ctx, name+"@"+rev)
	if err != nil {
		return nil, err
	}
	if enc == EncodingJSON {
		return r.json, nil
	}
	return r.binary, nil
}

func (s *PubSubSchemas) revision(ctx context.Context, id string) (*revision, error) {
	s.mu.RLock()
	r := s.revs[id]
	s.mu.RUnlock()
	if r != nil {
		return r, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, failure.Retryable(failure.StageRegistry, fmt.Errorf("fetching schema %s: %w", id, err))
	}
	// The fetch outlives a caller that gives up: others may share it.
	ch := s.group.DoChan(id, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
		defer cancel()
		r, err := s.fetch(fctx, id)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.revs[id] = r
		s.mu.Unlock()
		return r, nil
	})
	select {
	case <-ctx.Done():
		return nil, failure.Retryable(failure.StageRegistry, fmt.Errorf("fetching schema %s: %w", id, ctx.Err()))
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*revision), nil
	}
}

func (s *PubSubSchemas) fetch(ctx context.Context, id string) (*revision, error) {
	sc, err := s.client.GetSchema(ctx, &pubsubpb.GetSchemaRequest{Name: id, View: pubsubpb.SchemaView_FULL})
	if err != nil {
		err = fmt.Errorf("fetching schema %s: %w", id, err)
		switch status.Code(err) {
		case codes.NotFound, codes.InvalidArgument:
			return nil, failure.Permanent(failure.StageRegistry, err)
		}
		return nil, failure.Retryable(failure.StageRegistry, err)
	}
	if sc.GetType() != pubsubpb.Schema_AVRO {
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("schema %s is %s, not an Avro schema", id, sc.GetType()))
	}
	w, err := parseRevision(id, sc.GetDefinition())
	if err != nil {
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("schema %s: %w", id, err))
	}
	return w, nil
}

// parseRevision parses a revision's definition once, into a private cache
// (names are unique within one schema, not across revisions), and builds its
// two Writers, each with its own frozen hamba config.
func parseRevision(id, definition string) (*revision, error) {
	sch, err := avro.ParseWithCache(definition, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("parsing the Avro definition: %w", err)
	}
	if sch.Type() != avro.Record {
		return nil, errors.New("top-level Avro type is " + string(sch.Type()) + ", want a record")
	}
	key := "pubsub:" + id
	return &revision{
		binary: newWriter(key+"/binary", sch, nil),
		json:   newWriter(key+"/json", sch, avroJSONToBinary),
	}, nil
}

func avroJSONToBinary(w *Writer, data []byte) ([]byte, error) {
	return transcode(avroJSON, w.api, w.Schema, data)
}
