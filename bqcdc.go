// Package bqcdc is the deployable root of the repository.
//
// The Cloud Run functions Go buildpack builds the package at the root of the
// uploaded source and generates a main that imports it. Importing the function
// packages here runs their init(), which registers the entry points with the
// Functions Framework; the deployment's entry point ("Ingest" or "Compact")
// then selects one. Registration is all init() does: clients are created on
// the first request, so each deployed function pays only for itself.
package bqcdc

import (
	_ "github.com/bqcdc/bqcdc/functions/ingest"
)
