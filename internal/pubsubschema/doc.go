// Package pubsubschema fetches the Avro schema revisions Pub/Sub names on
// messages delivered from a topic with a schema, and keeps them: it is the
// Pub/Sub counterpart of package registry (Confluent Schema Registry). What
// a revision's bytes mean is package formats' business; this package only
// fetches definitions and hands them to formats.PubSubRevision.
//
// # What it fetches
//
// Pub/Sub sets three attributes on such a message (formats.AttrSchemaName,
// formats.AttrSchemaRevision, formats.AttrSchemaEncoding). Cache.Lookup
// reads them, fetches the revision projects/p/schemas/s@rev with the schema
// admin client (cloud.google.com/go/pubsub/v2/apiv1 SchemaClient.GetSchema,
// view FULL; the caller needs roles/pubsub.viewer on the schemas) and
// returns the formats.Writer for the message's encoding, BINARY or JSON.
//
// # Caching
//
// A revision is immutable, so a fetched one is kept for the life of the
// process, both encodings' Writers built at once; the cache is not bounded
// (a deployment has few schemas, and OnlyProjects keeps publishers from
// naming schemas elsewhere). Concurrent first lookups of one revision share
// one fetch (singleflight), which runs detached from the message that
// started it, under its own timeout, so that a caller giving up does not
// fail the others waiting on it. Failures are not cached: the next message
// asks again.
//
// # Errors
//
// Every error Lookup returns is classified with package failure at
// failure.StageRegistry. Permanent, the same message can never succeed:
// attributes missing or unknown, a schema outside OnlyProjects, a revision
// that does not exist (NotFound, InvalidArgument; revisions are immutable
// and a deleted one never returns), a schema that is not Avro, an Avro
// definition that does not parse or is not a record. Retryable, redeliver:
// everything else, notably Unavailable, DeadlineExceeded, PermissionDenied
// (a deployment problem such as a missing role: keep the message until it
// is fixed) and a cancelled context. RPC errors are wrapped, so
// status.Code still reads their code.
//
// # OnlyProjects
//
// The schema name is an attribute any publisher sets. Without a
// restriction, a name in a project the function cannot read fails with
// PermissionDenied, which is retried until Pub/Sub gives up. OnlyProjects
// names the projects whose schemas may be fetched (the deployment's own);
// a name elsewhere is refused at once, permanently, without a fetch.
package pubsubschema
