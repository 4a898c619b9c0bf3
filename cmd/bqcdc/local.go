package main

import (
	"context"

	"github.com/bqcdc/bqcdc/internal/localopts"
)

// runLocal runs `bqcdc local` in the dev binary (see runDev), after
// checking its flags here: -h and a mistyped flag answer without a build.
func runLocal(ctx context.Context, args []string) error {
	var l localopts.Local
	if err := parseFlags(ctx, localopts.LocalFlags(&l), args); err != nil {
		return err
	}
	return runDev(ctx, "local", args)
}
