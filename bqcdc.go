// Package bqcdc is the deployable root of the repository.
//
// The Cloud Run functions Go buildpack builds the package at the root of the
// uploaded source and generates a main that imports it. This package's
// init() registers both entry points with the Functions Framework; the
// deployment's entry point ("Ingest" or "Compact") then selects one.
// Registration is all init() does: each function configures itself from the
// environment on its first request, so each deployed function pays only for
// itself. The function packages register nothing themselves, so the local
// stack can serve them configured its own way.
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
	compact.Register(sub)
	ingest.Register(sub)
}
