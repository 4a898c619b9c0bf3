package bqwrite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
)

// SchemaPropagation is how long after a table's schema changed BigQuery may
// still refuse rows that use the new columns on an existing default stream
// (the Storage Write API picks up a new table schema within minutes, not at
// once). Within it a refused append is retried rather than dead-lettered.
const SchemaPropagation = 10 * time.Minute

// Evolution is the result of Evolve.
type Evolution struct {
	Table *Table   // the table as it is now, with a stream for its schema
	Added []string // columns this call added (dotted for RECORD fields); empty if another writer already had
}

// Evolve adds the columns of cols the table lacks (NULLABLE, with their
// descriptions), sets labels, and reopens the table's stream with the new
// schema. It is safe against concurrent evolutions by other instances: the
// update is conditional on the table's etag, and on a conflict the table is
// read again and the merge redone. A column whose type cannot hold cols'
// values is returned as an *evolve.Conflict.
func (w *Writer) Evolve(ctx context.Context, t *Table, cols schema.Columns, labels map[string]string) (Evolution, error) {
	ref := w.bq.Dataset(w.dataset).Table(t.Name)
	md := t.Metadata
	for attempt := 0; ; attempt++ {
		merged, added, err := evolve.Merge(bqschema.FromBigQuery(md.Schema), cols)
		if err != nil {
			return Evolution{}, err
		}
		var upd bigquery.TableMetadataToUpdate
		changed := false
		if len(added) > 0 {
			upd.Schema = bqschema.ToBigQuery(merged)
			changed = true
		}
		for k, v := range labels {
			if md.Labels[k] != v {
				upd.SetLabel(k, v)
				changed = true
			}
		}
		if changed {
			_, err = ref.Update(ctx, upd, md.ETag)
		}
		if err == nil {
			// Read the table again now, whatever its age, for a stream with
			// its new schema; not through w.setup, as a refresh already in
			// flight may have read the metadata before this update.
			nt, err := w.open(ctx, t.Name, t)
			return Evolution{Table: nt, Added: added}, err
		}
		if !bqerror.PreconditionFailed(err) || attempt == 4 {
			return Evolution{}, fmt.Errorf("adding columns %s to table %s: %w", strings.Join(added, ", "), t.Name, err)
		}
		// Another instance changed the table first: merge again on top of it.
		if md, err = ref.Metadata(ctx); err != nil {
			return Evolution{}, fmt.Errorf("re-reading table %s: %w", t.Name, err)
		}
	}
}

// propagating reports whether err is BigQuery refusing rows for columns it
// does not know yet on a table whose metadata changed within
// SchemaPropagation (lastModifiedTime covers schema updates by any
// instance). This path has not been exercised against BigQuery itself,
// whose emulator accepts the rows.
func (t *Table) propagating(err error) bool {
	if t.Metadata == nil || time.Since(t.Metadata.LastModifiedTime) >= SchemaPropagation {
		return false
	}
	return bqerror.SchemaNotYetKnown(err)
}
