package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/apply"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/registry"
)

// `bqcdc apply` against what the stack already applied changes nothing, and
// the views carry their descriptions for the BigQuery console.
func TestApplyIsIdempotentAndDescribesViews(t *testing.T) {
	ctx := context.Background()
	var rep apply.Report
	_, err := apply.AllWith(ctx, stack.BigQuery, apply.Target{Project: stack.Project, Dataset: stack.Dataset}, stack.Flows,
		apply.Schemas{Dir: stack.SchemasDir, Registry: registry.New(stack.RegistryURL, registry.Options{})}, localstack.ApplyOptions, &rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range rep {
		if !strings.HasSuffix(line, ": unchanged") && !strings.HasSuffix(line, ": exists") {
			t.Errorf("a second apply changed something: %q", line)
		}
	}
	md, err := stack.BigQuery.Dataset(stack.Dataset).Table("items").Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.Description, "Flow items_current") || !strings.Contains(md.Description, "SCD type 1") {
		t.Errorf("view description = %q", md.Description)
	}
	described := map[string]string{}
	for _, f := range md.Schema {
		described[f.Name] = f.Description
	}
	if !strings.HasPrefix(described["id"], "Key.") || !strings.Contains(described["_cdc_sequence"], "Sortable source position") {
		t.Errorf("column descriptions = %v", described)
	}
}
