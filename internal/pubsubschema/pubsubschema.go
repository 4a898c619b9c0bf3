package pubsubschema

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	pubsub "cloud.google.com/go/pubsub/v2/apiv1"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"golang.org/x/sync/singleflight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fetchTimeout bounds one schema fetch, which runs detached from the
// context of the message that started it (others may be waiting on it).
const fetchTimeout = 60 * time.Second

// Cache looks up the Avro schema revisions named by Pub/Sub's
// googclient_schema* attributes and keeps their Writers (see the package
// doc). It is safe for concurrent use.
type Cache struct {
	client   *pubsub.SchemaClient
	projects map[string]bool // the projects whose schemas may be fetched; nil: any
	mu       sync.RWMutex
	revs     map[string]*revision // by projects/p/schemas/s@rev
	group    singleflight.Group
}

// revision holds one schema revision's Writers, one per encoding; they share
// the parsed schema.
type revision struct{ binary, json *formats.Writer }

// New returns a cache fetching from c, the Pub/Sub schema admin client
// (cloud.google.com/go/pubsub/v2/apiv1 NewSchemaClient; it needs
// roles/pubsub.viewer on the schemas). The caller keeps c open.
func New(c *pubsub.SchemaClient) *Cache {
	return &Cache{client: c, revs: map[string]*revision{}}
}

// OnlyProjects restricts the schemas Lookup fetches to those of the given
// projects (the deployment's own). The schema name is an attribute any
// publisher sets: without the restriction, a name in a project the function
// cannot read fails with PermissionDenied, which is retried (it usually
// means a missing role) until Pub/Sub gives up. With it, a name in another
// project is refused at once, permanently, without a fetch. Call it before
// the first Lookup.
func (c *Cache) OnlyProjects(projects ...string) *Cache {
	c.projects = map[string]bool{}
	for _, p := range projects {
		c.projects[p] = true
	}
	return c
}

// Lookup returns the Writer for a message delivered from a topic with a
// schema, chosen by its attributes (schema name, revision id, encoding).
//
// Errors are classified at the registry stage. Permanent: attributes missing
// or unknown, a schema outside OnlyProjects, a revision that does not exist
// (NotFound; revisions are immutable and a deleted one never returns), a
// schema that is not Avro, an Avro definition that does not parse or is not
// a record. Retryable: everything else, notably Unavailable,
// DeadlineExceeded, PermissionDenied (a deployment problem: keep the message
// until it is fixed) and a cancelled context.
func (c *Cache) Lookup(ctx context.Context, attrs map[string]string) (*formats.Writer, error) {
	name, rev, enc := attrs[formats.AttrSchemaName], attrs[formats.AttrSchemaRevision], attrs[formats.AttrSchemaEncoding]
	switch {
	case name == "":
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message has no %s attribute", formats.AttrSchemaName))
	case rev == "":
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message names schema %s but has no %s attribute", name, formats.AttrSchemaRevision))
	case enc != formats.EncodingBinary && enc != formats.EncodingJSON:
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message has %s=%q, want %s or %s", formats.AttrSchemaEncoding, clip(enc), formats.EncodingBinary, formats.EncodingJSON))
	}
	if c.projects != nil {
		project, ok := strings.CutPrefix(name, "projects/")
		if project, _, _ = strings.Cut(project, "/"); !ok || !c.projects[project] {
			return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("message names schema %q, which is not in a project this function reads schemas from", clip(name)))
		}
	}
	r, err := c.revision(ctx, name+"@"+rev)
	if err != nil {
		return nil, err
	}
	if enc == formats.EncodingJSON {
		return r.json, nil
	}
	return r.binary, nil
}

func (c *Cache) revision(ctx context.Context, id string) (*revision, error) {
	c.mu.RLock()
	r := c.revs[id]
	c.mu.RUnlock()
	if r != nil {
		return r, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, failure.Retryable(failure.StageRegistry, fmt.Errorf("fetching schema %s: %w", id, err))
	}
	// The fetch outlives a caller that gives up: others may share it.
	ch := c.group.DoChan(id, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
		defer cancel()
		r, err := c.fetch(fctx, id)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.revs[id] = r
		c.mu.Unlock()
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

func (c *Cache) fetch(ctx context.Context, id string) (*revision, error) {
	sc, err := c.client.GetSchema(ctx, &pubsubpb.GetSchemaRequest{Name: id, View: pubsubpb.SchemaView_FULL})
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
	// A definition that does not parse today never will: the revision is
	// immutable.
	binary, json, err := formats.PubSubRevision(id, sc.GetDefinition())
	if err != nil {
		return nil, failure.Permanent(failure.StageRegistry, fmt.Errorf("schema %s: %w", id, err))
	}
	return &revision{binary: binary, json: json}, nil
}

// clip shortens an attribute quoted in an error: attributes come from any
// publisher and may be long.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
