// Package emulator holds every concession bqcdc makes to the emulators it
// runs against locally and in tests: goccy/bigquery-emulator v0.8.1 (REST and
// Storage Write gRPC) and pstest. Production code never asks "is this the
// emulator?" anywhere else: package clients installs the client-side
// concessions when an endpoint is configured, and the local stack puts
// WrapREST in front of the emulator's REST handler. Against Google Cloud none
// of this code runs.
//
// The concessions, and why each is needed:
//
//  1. Appends name their stream (storage.go, client side). managedwriter
//     names the write stream only in the first AppendRows request of a
//     connection, as the API allows; the emulator routes a request without a
//     name to an arbitrary open stream, even another table's. The
//     interceptor fills the name into every request (BigQuery accepts it).
//  2. Fresh default streams after a table rebuild (storage.go). The emulator
//     caches a table's schema in its default stream; after concession 3
//     rebuilt a table with more columns, appends go to a default stream of
//     the new table generation, which the emulator creates with the current
//     schema.
//  3. Schema changes take effect (rest.go, schemaShim). tables.update adding
//     columns changes the emulator's metadata but not its SQL tables, and a
//     view's changed query is ignored; the shim rebuilds the table (rows
//     copied aside and back) or recreates the view before forwarding.
//  4. FLOAT columns are created as FLOAT64 (rest.go). The client library
//     names the type FLOAT, as BigQuery reports it; the emulator refuses
//     INSERT ... SELECT of a FLOAT64 value into a column created as FLOAT.
//     Reading either spelling back is package bqschema's job (LegacyNames),
//     which is a no-op against BigQuery.
//  5. SQLite's "database is locked" becomes 503 (rest.go). The emulator keeps
//     every table in one SQLite file and answers concurrent writers with
//     that text; BigQuery's transient failures are 5xx, and bqcdc retries
//     by code (package bqerror), so the shim says it as BigQuery would.
//  6. Finished jobs are purged (the local stack's janitor). Every emulator
//     request loads all jobs of the project, so queries slow down as jobs
//     accumulate.
//  7. Pub/Sub: clients reach pstest through ClientOptions (no TLS, no
//     credentials), as PUBSUB_EMULATOR_HOST does for the Pub/Sub client.
//  8. One request at a time (gate.go): the emulator's single SQLite
//     database answers concurrent writers with "database is locked" after
//     waiting up to 60 s, so the REST shim and emulator connections queue
//     requests instead.
//  9. No connection multiplexing (package clients, WriterOptions): the
//     emulator decodes every request of an AppendRows connection with the
//     descriptor of the first, so tables of different schemas sharing a
//     connection get NULL rows. Against Google the streams of all tables
//     share a few connections; the fake in internal/dev/fakebq, which
//     decodes each request with its own descriptor, tests that path.
//  10. Dead-letter forwarding (the local stack's relay): pstest forwards a
//     message past its subscription's max delivery attempts to the
//     dead-letter topic but acknowledges it with the message id instead of
//     the ack id, which it ignores, so it forwards the message again on
//     every pull. The stack's subscriptions carry a policy out of reach
//     (pstest still counts attempts) and the relay forwards at the
//     configured attempts, with the attributes Pub/Sub adds.
//  11. No table functions (apply.Options.SkipTableFunctions, set by the
//     local stack, by the tests' environments and by `bqcdc apply` given an
//     emulator endpoint). The emulator's SQL analyzer crashes when a flow's
//     <target>_at/_changes/_as_of is called, and every CREATE TABLE
//     FUNCTION grows the analyzer's WebAssembly heap: a test binary
//     creating them for every flow it applied passed 2 GiB and died with
//     "slice bounds out of range [-2146955632:]" in go-googlesql's
//     Module.invoke (a 32-bit pointer read as negative). Tests run the
//     functions' bodies as queries instead (render.AtQuery, ChangesQuery,
//     AsOfQuery); one test still creates them, to check the DDL is accepted.
//  12. A table's lastModifiedTime is its creation time in seconds where the
//     API has milliseconds (the client reads January 1970), and appends do
//     not move it. Compaction's snapshot settle time compares it with the
//     clock: against the emulator every snapshot table looks settled, so
//     TestSnapshotSettle sets its clock from what the table reports.
//  13. The analyzer's heap grows with every statement it analyzes, not only
//     table functions: with compaction materializing change feeds (a large
//     statement per flow and run) the e2e binary passed 2 GiB again, the
//     same crash. The tests of what views and feeds fold to run in a binary
//     of their own (internal/dev/e2e/folds), and those of materialized
//     views in two more (internal/dev/e2e/goldprop and goldviews, after they took the e2e
//     binary past 2 GiB once more), each with its own heap.
//  14. A UNION ALL's second operand is evaluated with the first operand's
//     column expressions where those are column references, followed
//     through subqueries and CTEs and resolved by name in the second
//     operand's input (literals are evaluated per operand). The bitemporal
//     view's one-pass path builds both kinds of row in one SELECT over
//     UNNEST([FALSE, TRUE]) instead; its other UNION ALLs put first the
//     operand whose references also hold in the other (the cut rows before
//     the versions, the ordinals' placeholders named as the beliefs'
//     columns). BigQuery runs them the same.
//  15. TIMESTAMP fields of a STRUCT come back as text ("2026-12-02
//     01:00:00+00") where a top-level TIMESTAMP is microseconds, and the
//     client cannot read them ("strconv.ParseInt: parsing ..."). A
//     materialized view's window is such a STRUCT: the tests and the demo
//     read its bounds as UNIX_MICROS (viewcheck.Gold); the view itself is
//     unchanged.
//  16. CREATE OR REPLACE TABLE t AS <query> of an existing t fails ("table
//     is already created"), and a query reading t would find it dropped;
//     BigQuery replaces t atomically, reading it first (a materialized
//     view's refresh reads its state to write it). The REST shim
//     (replace.go) writes the result aside, drops t, creates t from it and
//     drops the copy, keeping t's labels.
//  17. Apostrophes in SQL comments: the emulator rewrites query text
//     before analysing it with scanners that take a quote in a comment
//     ("the key's events") for the start of a string literal, and past an
//     odd number of them its rewrites act on the wrong text: a valid
//     statement failed ("Window ORDER BY is required for analytic function
//     lead") depending only on where its comments fell. bqcdc's SQL writes
//     its comments with typographic apostrophes (sql/render: the templates'
//     comment lines, and user text of an odd count in commentText), which
//     BigQuery reads the same; the emulator then keeps view definitions
//     exactly as bqcdc wrote them.
//  18. IN lists: the emulator runs x IN (v1, ..., vn) as one SQLite
//     function of n+1 arguments, and SQLite takes at most 1,000, so a list
//     of 1,000 values fails ("too many arguments on function
//     googlesqlite_in"). A compaction run's key filter (sql/render:
//     KeyFilter, up to KeyRanges values) writes its values as IN lists of
//     at most 512, joined by OR, which BigQuery prunes the same.
//
// Choices that suit both and are therefore not concessions: NUMERIC,
// BIGNUMERIC, DATETIME and TIME are appended as strings (package bqwrite),
// which the Storage Write API accepts and the emulator stores correctly
// (its packed binary forms come out as zeros or garbage).
package emulator

import (
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// ClientOptions are the options a Google Cloud client needs to reach an
// emulator at endpoint: plain text, no credentials.
func ClientOptions(endpoint string) []option.ClientOption {
	return []option.ClientOption{option.WithEndpoint(endpoint), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials()))}
}
