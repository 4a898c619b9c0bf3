// Package bqcdc is the deployable root of the repository.
//
// The Cloud Run functions Go buildpack builds the package at the root of the
// uploaded source and generates a main that imports it. Importing the function
// packages here runs their init(), which registers the entry points with the
// Functions Framework; the deployment's entry point ("Ingest" or "Compact")
// then selects one. Registration is all init() does: clients are created on
// the first request, so each deployed function pays only for itself.
//
// The flow declarations are built in, so the flows that run locally are the
// flows that are deployed.
package bqcdc

import (
	"embed"
	"io/fs"

	"github.com/bqcdc/bqcdc/functions/compact"
	"github.com/bqcdc/bqcdc/functions/ingest"
)

//go:embed sql/flows/*.sql
var flows embed.FS

func init() {
	sub, err := fs.Sub(flows, "sql/flows")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	compact.UseFlows(sub)
	ingest.UseFlows(sub)
}
