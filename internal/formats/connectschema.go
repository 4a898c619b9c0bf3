package formats

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/bqcdc/bqcdc/internal/limits"
)

// Kafka Connect's logical type names.
const (
	connectDecimal   = "org.apache.kafka.connect.data.Decimal"
	connectDate      = "org.apache.kafka.connect.data.Date"
	connectTime      = "org.apache.kafka.connect.data.Time"
	connectTimestamp = "org.apache.kafka.connect.data.Timestamp"

	// precisionParam carries a Decimal's precision; AvroConverter assumes 64
	// without it.
	precisionParam   = "connect.decimal.precision"
	defaultPrecision = 64

	avroConnectNamespace = "io.confluent.connect.avro"

	connectBits = "io.debezium.data.Bits"
)

// maxConnectFields bounds the struct fields of one Connect schema, all
// levels together. A Debezium envelope repeats the row's fields in "before"
// and "after", and the row becomes a table of at most limits.MaxColumns
// columns (nested fields included); the envelope's own fields (source,
// transaction, op, ts_ms) are a few dozen.
const maxConnectFields = 2*limits.MaxColumns + 256

// maxStructFields bounds the fields of one Connect struct: MySQL's limit of
// 4,096 columns per table, the widest of the databases Debezium reads
// (PostgreSQL allows 1,600, Oracle 1,000, SQL Server 1,024 non-sparse).
// It matters for time, not memory: hamba's first decode with a schema
// builds its fingerprint text in time quadratic in a record's fields (about
// 0.3 s for 4,096 fields, 3 s for 10,000).
const maxStructFields = 4096

// connectSchema is one schema as JsonConverter writes it (schemas.enable=true).
type connectSchema struct {
	Type       string            `json:"type"`
	Optional   bool              `json:"optional,omitempty"`
	Default    json.RawMessage   `json:"default,omitempty"`
	Name       string            `json:"name,omitempty"`
	Version    json.Number       `json:"version,omitempty"`
	Doc        string            `json:"doc,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Field      string            `json:"field,omitempty"`
	Fields     []*connectSchema  `json:"fields,omitempty"`
	Items      *connectSchema    `json:"items,omitempty"`
	Keys       *connectSchema    `json:"keys,omitempty"`
	Values     *connectSchema    `json:"values,omitempty"`
}

// avroSchemaJSON converts a Connect schema into the Avro schema that
// Confluent's AvroConverter (AvroData.fromConnectSchema, default settings)
// registers for it:
//
//   - int8 and int16 become int marked "connect.type", int32 int, int64 long,
//     float32 float, float64 double; boolean, string and bytes stay.
//   - Decimal becomes bytes with the decimal logical type (precision from
//     connect.decimal.precision, else 64); Date, Time and Timestamp become
//     date, time-millis and timestamp-millis.
//   - A named schema carries "connect.name", and as present "connect.version",
//     "connect.doc", "connect.parameters" and "connect.default". A struct
//     becomes a record named after it (namespace = the part before the last
//     dot), an unnamed one io.confluent.connect.avro.ConnectDefault, 2, 3...
//   - An optional schema becomes ["null", T] with default null, or [T, "null"]
//     with T's default when it has one.
//   - A map with string keys becomes an Avro map, any other map an array of
//     io.confluent.connect.avro.MapEntry records {key, value}.
//   - A record met again by name is written as a reference to its first
//     definition, as "after" refers to the "Value" declared in "before".
//
// Names that are not valid Avro names (Debezium's topic prefixes may hold
// dashes) have each invalid character replaced by '_', as Debezium's
// schema.name.adjustment.mode=avro does; connect.name keeps the original.
func avroSchemaJSON(cs *connectSchema) ([]byte, error) {
	if cs.Type != "struct" {
		return nil, fmt.Errorf("top-level Connect schema is %q, want a struct", cs.Type)
	}
	b := &avroBuilder{named: map[string]*connectSchema{}, canon: map[*connectSchema]string{}}
	// The top level is the record itself even if marked optional: a null
	// value is a tombstone, which never reaches the schema.
	s, err := b.base(cs, "", "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

type avroBuilder struct {
	named              map[string]*connectSchema // Avro full name -> its first definition
	canon              map[*connectSchema]string // canonical definitions computed so far
	defaults, mapEntry int                       // counters for generated record names
	depth, fields      int                       // nesting now; struct fields so far
}

// canonical is a struct's definition without what belongs to the field
// holding it, computed only when a name recurs (a definition marshals its
// whole subtree).
func (b *avroBuilder) canonical(cs *connectSchema) (string, error) {
	if c, ok := b.canon[cs]; ok {
		return c, nil
	}
	c, err := canonicalDefinition(cs)
	b.canon[cs] = c
	return c, err
}

// field converts a schema in a field position: optional becomes a union,
// and the returned default (ok false: none) is the field's Avro default.
func (b *avroBuilder) field(cs *connectSchema, path, ns string) (typ any, def any, hasDef bool, err error) {
	base, err := b.base(cs, path, ns)
	if err != nil {
		return nil, nil, false, err
	}
	def, hasDef, err = avroDefault(cs, cs.Default)
	if err != nil {
		return nil, nil, false, fmt.Errorf("field %s: default: %w", path, err)
	}
	if !cs.Optional {
		return base, def, hasDef, nil
	}
	if hasDef {
		return []any{base, "null"}, def, true, nil
	}
	return []any{"null", base}, nil, true, nil
}

// base converts a schema without its optionality. ns is the namespace in
// effect, which hamba (unlike Java Avro) applies even to a name declared
// with an empty namespace; references must use the full name hamba sees.
func (b *avroBuilder) base(cs *connectSchema, path, ns string) (any, error) {
	b.depth++
	defer func() { b.depth-- }()
	if b.depth > limits.MaxSchemaNesting {
		return nil, limits.Errorf("field %s: the Connect schema nests deeper than %d levels", pathOr(path), limits.MaxSchemaNesting)
	}
	var s map[string]any
	switch cs.Type {
	case "int8", "int16":
		s = map[string]any{"type": "int", "connect.type": cs.Type}
	case "int32":
		s = map[string]any{"type": "int"}
	case "int64":
		s = map[string]any{"type": "long"}
	case "float32":
		s = map[string]any{"type": "float"}
	case "float64":
		s = map[string]any{"type": "double"}
	case "boolean", "string", "bytes":
		s = map[string]any{"type": cs.Type}
	case "array":
		if cs.Items == nil {
			return nil, fmt.Errorf("field %s: array without items", pathOr(path))
		}
		items, err := b.nested(cs.Items, path+"[]", ns)
		if err != nil {
			return nil, err
		}
		s = map[string]any{"type": "array", "items": items}
	case "map":
		return b.mapSchema(cs, path, ns)
	case "struct":
		return b.record(cs, path, ns)
	default:
		return nil, fmt.Errorf("field %s: unknown Connect type %q", pathOr(path), cs.Type)
	}
	if err := logical(cs, s); err != nil {
		return nil, fmt.Errorf("field %s: %w", pathOr(path), err)
	}
	if err := b.connectProps(cs, s); err != nil {
		return nil, fmt.Errorf("field %s: %w", pathOr(path), err)
	}
	if len(s) == 1 {
		return s["type"], nil // a plain type, written as its name
	}
	return s, nil
}

// nested converts an array item or map value, which AvroConverter makes a
// union when optional but gives no default.
func (b *avroBuilder) nested(cs *connectSchema, path, ns string) (any, error) {
	base, err := b.base(cs, path, ns)
	if err != nil || !cs.Optional {
		return base, err
	}
	return []any{"null", base}, nil
}

func logical(cs *connectSchema, s map[string]any) error {
	switch cs.Name {
	case connectDecimal:
		if cs.Type != "bytes" {
			return fmt.Errorf("Decimal over %s, want bytes", cs.Type)
		}
		scale, err := strconv.Atoi(cs.Parameters["scale"])
		if err != nil {
			return fmt.Errorf("Decimal without a valid scale parameter: %q", clip(cs.Parameters["scale"]))
		}
		precision := defaultPrecision
		if p, ok := cs.Parameters[precisionParam]; ok {
			if precision, err = strconv.Atoi(p); err != nil {
				return fmt.Errorf("Decimal precision %q is not a number", clip(p))
			}
		}
		if err := checkDecimal(precision, scale); err != nil {
			return err
		}
		s["logicalType"], s["precision"], s["scale"] = "decimal", precision, scale
	case connectDate:
		s["logicalType"] = "date"
	case connectTime:
		s["logicalType"] = "time-millis"
	case connectTimestamp:
		s["logicalType"] = "timestamp-millis"
	case connectBits:
		if l, ok := cs.Parameters["length"]; ok {
			n, err := strconv.Atoi(l)
			if err != nil || n < 0 || n > limits.MaxBitsLength {
				return limits.Errorf("Bits length %q is not a number of bits from 0 to %d (a BigQuery row holds at most %d bytes)",
					clip(l), limits.MaxBitsLength, limits.MaxMessageBytes)
			}
		}
	}
	return nil
}

// checkDecimal bounds what a schema may declare of a decimal before anything
// computes 10^scale: wider than PostgreSQL's widest NUMERIC, no source
// Debezium reads writes it.
func checkDecimal(precision, scale int) error {
	if precision < 0 || precision > limits.MaxDecimalPrecision || scale < -limits.MaxDecimalScale || scale > limits.MaxDecimalScale {
		return limits.Errorf("Decimal precision %d and scale %d: precision must be 0 to %d and scale %d to %d (PostgreSQL's widest NUMERIC)",
			precision, scale, limits.MaxDecimalPrecision, -limits.MaxDecimalScale, limits.MaxDecimalScale)
	}
	return nil
}

func (b *avroBuilder) connectProps(cs *connectSchema, s map[string]any) error {
	if cs.Name != "" {
		s["connect.name"] = cs.Name
	}
	if cs.Version != "" {
		s["connect.version"] = cs.Version
	}
	if cs.Doc != "" && cs.Type != "struct" {
		s["connect.doc"] = cs.Doc
	}
	if len(cs.Parameters) > 0 {
		s["connect.parameters"] = cs.Parameters
	}
	def, ok, err := avroDefault(cs, cs.Default)
	if err != nil {
		return fmt.Errorf("default: %w", err)
	}
	if ok {
		s["connect.default"] = def
	}
	return nil
}

func (b *avroBuilder) record(cs *connectSchema, path, ns string) (any, error) {
	var name, space string
	if cs.Name == "" {
		b.defaults++
		name, space = "ConnectDefault", avroConnectNamespace
		if b.defaults > 1 {
			name += strconv.Itoa(b.defaults)
		}
	} else {
		space, name = splitName(cs.Name)
	}
	if space == "" {
		space = ns
	}
	full := join(space, name)
	if prev, ok := b.named[full]; ok {
		a, err := b.canonical(prev)
		if err != nil {
			return nil, err
		}
		c, err := b.canonical(cs)
		if err != nil {
			return nil, err
		}
		if a != c {
			return nil, fmt.Errorf("field %s: two different schemas are named %s", pathOr(path), cs.Name)
		}
		return full, nil
	}
	b.named[full] = cs
	if len(cs.Fields) > maxStructFields {
		return nil, limits.Errorf("field %s: a struct of %d fields; bqcdc reads structs of up to %d (MySQL's limit of columns per table, the widest Debezium source)",
			pathOr(path), len(cs.Fields), maxStructFields)
	}
	if b.fields += len(cs.Fields); b.fields > maxConnectFields {
		return nil, limits.Errorf("field %s: the Connect schema has more than %d struct fields (BigQuery tables hold %d columns, and a Debezium envelope repeats them in before and after)",
			pathOr(path), maxConnectFields, limits.MaxColumns)
	}
	fields := make([]any, 0, len(cs.Fields))
	for _, f := range cs.Fields {
		if f.Field == "" {
			return nil, fmt.Errorf("field %s: struct field without a name", pathOr(path))
		}
		if !validName(f.Field) {
			return nil, fmt.Errorf("field %s: %q is not a valid Avro field name (Debezium's field.name.adjustment.mode=avro fixes that)", pathOr(path), f.Field)
		}
		typ, def, hasDef, err := b.field(f, join(path, f.Field), space)
		if err != nil {
			return nil, err
		}
		af := map[string]any{"name": f.Field, "type": typ}
		if hasDef {
			af["default"] = def
		}
		fields = append(fields, af)
	}
	s := map[string]any{"type": "record", "name": name, "namespace": space, "fields": fields}
	if cs.Doc != "" {
		s["doc"] = cs.Doc
	}
	if err := b.connectProps(cs, s); err != nil {
		return nil, fmt.Errorf("field %s: %w", pathOr(path), err)
	}
	return s, nil
}

func (b *avroBuilder) mapSchema(cs *connectSchema, path, ns string) (any, error) {
	if cs.Keys == nil || cs.Values == nil {
		return nil, fmt.Errorf("field %s: map without keys or values", pathOr(path))
	}
	values, err := b.nested(cs.Values, path+"[value]", ns)
	if err != nil {
		return nil, err
	}
	var s map[string]any
	if cs.Keys.Type == "string" && !cs.Keys.Optional {
		s = map[string]any{"type": "map", "values": values}
	} else {
		keys, err := b.nested(cs.Keys, path+"[key]", ns)
		if err != nil {
			return nil, err
		}
		b.mapEntry++
		name := "MapEntry"
		if b.mapEntry > 1 {
			name += strconv.Itoa(b.mapEntry)
		}
		entry := map[string]any{"type": "record", "name": name, "namespace": avroConnectNamespace,
			"fields": []any{map[string]any{"name": "key", "type": keys}, map[string]any{"name": "value", "type": values}}}
		s = map[string]any{"type": "array", "items": entry}
	}
	if err := b.connectProps(cs, s); err != nil {
		return nil, fmt.Errorf("field %s: %w", pathOr(path), err)
	}
	return s, nil
}

// canonicalDefinition is a struct's definition without what belongs to the
// field holding it (its name, optionality and default).
func canonicalDefinition(cs *connectSchema) (string, error) {
	c := *cs
	c.Field, c.Optional, c.Default = "", false, nil
	b, err := json.Marshal(&c)
	return string(b), err
}
