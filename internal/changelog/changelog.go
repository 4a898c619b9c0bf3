// Package changelog is the one mapping from an Avro value schema to the
// changelog it lands in: how its records are read (cdc.Shape), its row
// image's fields (avrobq) and the changelog's columns (the image's, then
// catalog's metadata columns). apply creates and updates changelogs by it
// and ingest checks every writer and reader schema against it, so the table
// apply makes is the table ingest expects.
package changelog

import (
	"github.com/bqcdc/bqcdc/internal/avrobq"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/hamba/avro/v2"
)

// Layout is what a value schema puts in a changelog.
type Layout struct {
	Shape   cdc.Shape     // how to flatten its records
	Image   avrobq.Fields // the row image's fields, in order
	Columns schema.Columns
}

// Of maps a value schema (a Debezium envelope or a plain record). Its
// errors are permanent and carry the stage a message of the schema fails
// at: failure.StageDecode when the schema is not a record,
// failure.StageConvert when a type has no BigQuery column, and
// failure.StageSchema when the image's columns cannot sit beside the
// metadata (a column with the metadata prefix, or too many columns); then
// Shape and Image are set and Columns is nil, so a caller can still tell
// what the schema is.
func Of(s avro.Schema) (Layout, error) {
	var l Layout
	var err error
	if l.Shape, err = cdc.ShapeOf(s); err != nil {
		return Layout{}, failure.Permanent(failure.StageDecode, err)
	}
	if l.Image, err = avrobq.FromRecord(l.Shape.Image); err != nil {
		return Layout{}, failure.Permanent(failure.StageConvert, err)
	}
	if l.Columns, err = catalog.Schema(l.Image.Columns()); err != nil {
		return l, failure.Permanent(failure.StageSchema, err)
	}
	return l, nil
}
