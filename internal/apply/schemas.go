package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
)

// SourceSchema is the changelog layout of one source topic.
type SourceSchema struct {
	Source   string
	Columns  schema.Columns // the full changelog: row image + _cdc_* metadata
	SchemaID int            // registry id of the reader schema; 0 if not registered
	Origin   string         // where the schema came from, for reports
}

// Schemas finds the Avro value schema of each source: the latest version of
// subject "<topic>-value" in the registry, else schemas/<topic>-value.avsc.
// A local schema is registered when a registry is configured, so that the
// changelog can name its reader schema by id.
type Schemas struct {
	Dir      string           // folder of <topic>-value.avsc files; "" for none
	Registry *registry.Client // nil to work offline from Dir only
}

// Lookup returns the changelog layout of source.
func (s Schemas) Lookup(ctx context.Context, source string) (SourceSchema, error) {
	subject := catalog.Subject(source)
	var text, origin string
	id := 0
	if s.Registry != nil {
		var err error
		id, text, err = s.Registry.Latest(ctx, subject)
		switch {
		case err == nil:
			origin = fmt.Sprintf("registry subject %s (id %d)", subject, id)
		case errors.Is(err, registry.ErrNotFound):
		default:
			return SourceSchema{}, err
		}
	}
	if text == "" {
		if s.Dir == "" {
			return SourceSchema{}, fmt.Errorf("no schema for source %s: subject %s is not in the registry and no schemas folder is set", source, subject)
		}
		path := filepath.Join(s.Dir, subject+".avsc")
		b, err := os.ReadFile(path)
		if err != nil {
			return SourceSchema{}, fmt.Errorf("no schema for source %s: subject %s is not in the registry, and reading %s: %w", source, subject, path, err)
		}
		text, origin = string(b), path
		if s.Registry != nil {
			if id, err = s.Registry.Register(ctx, subject, text); err != nil {
				return SourceSchema{}, err
			}
			origin += fmt.Sprintf(" (registered as %s id %d)", subject, id)
		}
	}
	cols, err := ChangelogColumns(text)
	if err != nil {
		return SourceSchema{}, fmt.Errorf("schema of source %s from %s: %w", source, origin, err)
	}
	return SourceSchema{Source: source, Columns: cols, SchemaID: id, Origin: origin}, nil
}

// ChangelogColumns maps an Avro value schema (a Debezium envelope or a plain
// record) to the full changelog columns.
func ChangelogColumns(avroSchema string) (schema.Columns, error) {
	parsed, err := registry.Parse(avroSchema)
	if err != nil {
		return nil, fmt.Errorf("parsing Avro schema: %w", err)
	}
	if parsed.Type() != avro.Record {
		return nil, fmt.Errorf("the top level is %s, not a record: a value schema is a Debezium envelope or a row record", parsed.Type())
	}
	if err := registry.CheckFinite(parsed); err != nil {
		return nil, err
	}
	l, err := changelog.Of(parsed)
	var fe *failure.Error
	if errors.As(err, &fe) {
		return nil, fe.Err // the stage is ingest's concern; apply names the source
	} else if err != nil {
		return nil, err
	}
	return l.Columns, nil
}
