package transcode

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/bqwrite"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/changelog"
	"github.com/bqcdc/bqcdc/internal/dev/oracle"
	"github.com/bqcdc/bqcdc/internal/evolve"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// generic is the reference: the pipeline of ingest's Service.process
// from the payload to the encoded row (decode with formats.Writer, cdc
// oracle.Flatten, avrobq Convert, evolve Fit, reader defaults, oracle.Row,
// bqwrite.Encoder.Encode), step for step.
type generic struct {
	writer   *formats.Writer
	shape    cdc.Shape
	fields   avrobq.Fields
	fitter   *evolve.Fitter
	defaults map[string]any
	enc      *bqwrite.Encoder
	md       protoreflect.MessageDescriptor
}

func newGeneric(t testing.TB, w avro.Schema, table bigquery.Schema, defaults map[string]any) *generic {
	t.Helper()
	shape, fields, cols := changelogOf(t, w)
	fitter, err := evolve.NewFitter(bqschema.FromBigQuery(table), cols)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := bqwrite.NewEncoder(table)
	if err != nil {
		t.Fatal(err)
	}
	md, err := messageDescriptor(enc.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	return &generic{writer: formats.AvroBinary("test", w), shape: shape, fields: fields, fitter: fitter, defaults: defaults, enc: enc, md: md}
}

// row returns the encoded row in canonical form, the dropped count, or a
// classified error.
func (g *generic) row(payload []byte, m Meta) ([]byte, int, error) {
	rec, err := g.writer.Decode(payload)
	if err != nil {
		return nil, 0, failure.Permanent(failure.StageDecode, err)
	}
	ch, err := oracle.Flatten(g.shape, rec)
	if err != nil {
		return nil, 0, failure.Permanent(failure.StageEnvelope, err)
	}
	values, err := g.fields.Convert(ch.Image)
	if err != nil {
		return nil, 0, failure.Permanent(failure.StageConvert, err)
	}
	values, dropped, err := g.fitter.Fit(values)
	if err != nil {
		return nil, 0, failure.Permanent(failure.StageConvert, err)
	}
	for k, v := range g.defaults {
		if _, ok := values[k]; !ok {
			values[k] = v
		}
	}
	if !g.shape.Envelope {
		ch.Sequence = cdc.TimestampSequence(m.PublishTime)
	}
	row := oracle.Row(values, oracle.Meta{Op: ch.Op, SourceTS: ch.SourceTS, Sequence: ch.Sequence, IngestedAt: m.IngestedAt,
		PublishTime: m.PublishTime, MessageID: m.MessageID, SchemaID: m.SchemaID, Transaction: ch.Transaction})
	b, err := g.enc.Encode(row)
	if err != nil {
		return nil, 0, failure.Permanent(failure.StageEncode, err)
	}
	c, err := Canonical(g.md, b)
	if err != nil {
		return nil, 0, fmt.Errorf("canonicalizing the generic row: %w", err)
	}
	return c, dropped, nil
}

func loadSchema(t testing.TB, path string) avro.Schema {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := registry.Parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tableFor is the changelog `bqcdc apply` creates for writer schema s.
func tableFor(t testing.TB, s avro.Schema) bigquery.Schema {
	t.Helper()
	_, _, cols := changelogOf(t, s)
	return bqschema.ToBigQuery(cols)
}

// changelogOf is the envelope shape of writer schema s, its row image's
// fields and the changelog columns `bqcdc apply` derives from them (by
// changelog.Of, as apply does).
func changelogOf(t testing.TB, s avro.Schema) (cdc.Shape, avrobq.Fields, schema.Columns) {
	t.Helper()
	l, err := changelog.Of(s)
	if err != nil {
		t.Fatal(err)
	}
	return l.Shape, l.Image, l.Columns
}

// pair is a compiled plan and its reference.
type pair struct {
	name string
	plan *Plan
	ref  *generic
}

func newPair(t testing.TB, name string, w avro.Schema, table bigquery.Schema, defaults map[string]any) pair {
	t.Helper()
	p, err := Compile(Config{Writer: w, Table: table, Defaults: defaults})
	if err != nil {
		t.Fatalf("%s: Compile: %v", name, err)
	}
	return pair{name: name, plan: p, ref: newGeneric(t, w, table, defaults)}
}

var testMeta = Meta{MessageID: "m-1", PublishTime: time.Unix(1_799_999_999, 123_456_000), IngestedAt: time.Unix(1_800_000_000, 0), SchemaID: 7}

// compare runs both paths on payload and reports any difference: the
// same bytes and dropped count, or errors of the same stage. It returns
// the stage ("" for a row).
func (p pair) compare(t testing.TB, payload []byte, m Meta) failure.Stage {
	t.Helper()
	got, gotDropped, gotErr := p.plan.Append(nil, payload, m)
	if errors.Is(gotErr, errHostileCount) {
		// The generic path may exhaust memory on such input: only the
		// transcoder's own answer is checked.
		if failure.StageOf(gotErr) != failure.StageDecode || !failure.IsPermanent(gotErr) {
			t.Fatalf("%s: hostile count error not a permanent decode error: %v", p.name, gotErr)
		}
		return failure.StageDecode
	}
	want, wantDropped, wantErr := p.ref.row(payload, m)
	switch {
	case wantErr != nil && gotErr != nil:
		if failure.StageOf(wantErr) != failure.StageOf(gotErr) || !failure.IsPermanent(gotErr) {
			t.Fatalf("%s: payload %x: generic fails at %s (%v), transcoder at %s (%v)", p.name, payload,
				failure.StageOf(wantErr), wantErr, failure.StageOf(gotErr), gotErr)
		}
		return failure.StageOf(gotErr)
	case wantErr != nil:
		t.Fatalf("%s: payload %x: generic fails at %s (%v), transcoder gives a row %x", p.name, payload, failure.StageOf(wantErr), wantErr, got)
	case gotErr != nil:
		t.Fatalf("%s: payload %x: transcoder fails at %s (%v), generic gives a row %x", p.name, payload, failure.StageOf(gotErr), gotErr, want)
	}
	if !bytes.Equal(got, want) || gotDropped != wantDropped {
		t.Fatalf("%s: payload %x:\n transcoder %x (dropped %d)\n generic    %x (dropped %d)\n%s", p.name, payload, got, gotDropped, want, wantDropped, diffRows(p.ref.md, got, want))
	}
	return ""
}

func diffRows(md protoreflect.MessageDescriptor, a, b []byte) string {
	return fmt.Sprintf("transcoder: %s\ngeneric:    %s", describeRow(md, a), describeRow(md, b))
}
