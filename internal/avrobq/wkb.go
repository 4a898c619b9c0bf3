package avrobq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bqcdc/bqcdc/internal/failure"
)

// WKB geometry type codes, and the EWKB flags PostGIS sets on them.
const (
	wkbPoint uint32 = 1 + iota
	wkbLineString
	wkbPolygon
	wkbMultiPoint
	wkbMultiLineString
	wkbMultiPolygon
	wkbGeometryCollection

	ewkbZ    = 0x80000000
	ewkbM    = 0x40000000
	ewkbSRID = 0x20000000
)

var wkbNames = map[uint32]string{
	wkbPoint: "POINT", wkbLineString: "LINESTRING", wkbPolygon: "POLYGON", wkbMultiPoint: "MULTIPOINT",
	wkbMultiLineString: "MULTILINESTRING", wkbMultiPolygon: "MULTIPOLYGON", wkbGeometryCollection: "GEOMETRYCOLLECTION",
}

// maxWKBDepth bounds GEOMETRYCOLLECTION nesting, so hostile input cannot
// exhaust the stack.
const maxWKBDepth = 32

var errWKBShort = errors.New("WKB ends early")

// WKBToWKT converts 2D well-known binary (OGC WKB in either byte order, each
// nested geometry with its own, or PostGIS EWKB with an SRID of 0 or 4326)
// to the WKT BigQuery reads as GEOGRAPHY: "POINT(30 10)",
// "MULTIPOINT((10 40), (40 30))", "POLYGON EMPTY". Coordinates are written
// in Go's shortest form that reads back as the same float64, never rounded,
// and must be a valid longitude and latitude. Geometries with Z or M
// coordinates are refused: GEOGRAPHY is 2D, and dropping a dimension would
// lose data silently.
func WKBToWKT(wkb []byte) (string, error) {
	r := wkbReader{b: wkb}
	var out strings.Builder
	if err := r.geometry(&out, 0, 0); err != nil {
		return "", err
	}
	if len(r.b) != 0 {
		return "", fmt.Errorf("%d bytes after the end of the WKB geometry", len(r.b))
	}
	return out.String(), nil
}

type wkbReader struct {
	b     []byte
	order binary.ByteOrder
}

func (r *wkbReader) uint32() (uint32, error) {
	if len(r.b) < 4 {
		return 0, errWKBShort
	}
	v := r.order.Uint32(r.b)
	r.b = r.b[4:]
	return v, nil
}

func (r *wkbReader) float64() (float64, error) {
	if len(r.b) < 8 {
		return 0, errWKBShort
	}
	v := math.Float64frombits(r.order.Uint64(r.b))
	r.b = r.b[8:]
	return v, nil
}

// count reads an element count and checks that the remaining input can
// hold that many elements of at least minSize bytes.
func (r *wkbReader) count(minSize int) (int, error) {
	n, err := r.uint32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minSize) > uint64(len(r.b)) {
		return 0, fmt.Errorf("WKB count %d exceeds the %d bytes left", n, len(r.b))
	}
	return int(n), nil
}

// header reads a geometry's byte order, type and optional EWKB SRID.
func (r *wkbReader) header() (uint32, error) {
	if len(r.b) < 1 {
		return 0, errWKBShort
	}
	switch r.b[0] {
	case 0:
		r.order = binary.BigEndian
	case 1:
		r.order = binary.LittleEndian
	default:
		return 0, fmt.Errorf("WKB byte order %d is neither 0 nor 1", r.b[0])
	}
	r.b = r.b[1:]
	typ, err := r.uint32()
	if err != nil {
		return 0, err
	}
	if typ&(ewkbZ|ewkbM) != 0 || typ&^ewkbSRID >= 1000 {
		return 0, fmt.Errorf("WKB geometry type %#x has Z or M coordinates; BigQuery GEOGRAPHY is 2D", typ)
	}
	if typ&ewkbSRID != 0 {
		srid, err := r.uint32()
		if err != nil {
			return 0, err
		}
		if err := sridProblem(int64(int32(srid))); err != nil {
			return 0, err
		}
	}
	typ &^= ewkbSRID
	if wkbNames[typ] == "" {
		return 0, fmt.Errorf("unknown WKB geometry type %d", typ)
	}
	return typ, nil
}

// geometry writes one geometry; want, if not 0, is the type a Multi*
// container requires of its members, which are written without their
// type name.
func (r *wkbReader) geometry(out *strings.Builder, depth int, want uint32) error {
	if depth > maxWKBDepth {
		return fmt.Errorf("WKB geometry collections nested deeper than %d", maxWKBDepth)
	}
	typ, err := r.header()
	if err != nil {
		return err
	}
	if want != 0 && typ != want {
		return fmt.Errorf("WKB %s holds a %s", wkbNames[want+3], wkbNames[typ])
	}
	if want == 0 {
		out.WriteString(wkbNames[typ])
	}
	switch typ {
	case wkbPoint:
		x, y, err := r.coord()
		if err != nil {
			return err
		}
		if math.IsNaN(x) && math.IsNaN(y) { // how WKB writes POINT EMPTY
			return r.empty(out, want)
		}
		return writeCoords(out, x, y)
	case wkbLineString:
		return r.points(out, want)
	case wkbPolygon:
		return r.polygon(out, want)
	}
	member := typ - 3 // MULTIPOINT holds POINTs, and so on
	if typ == wkbGeometryCollection {
		member = 0
	}
	return r.list(out, want, 5, func() error { return r.geometry(out, depth+1, member) })
}

// coord reads one coordinate: x, then y.
func (r *wkbReader) coord() (x, y float64, err error) {
	if x, err = r.float64(); err != nil {
		return 0, 0, err
	}
	y, err = r.float64()
	return x, y, err
}

func (r *wkbReader) empty(out *strings.Builder, want uint32) error {
	if want == 0 {
		out.WriteByte(' ')
	}
	out.WriteString("EMPTY")
	return nil
}

// points writes a point list: "(x y, x y)".
func (r *wkbReader) points(out *strings.Builder, want uint32) error {
	return r.list(out, want, 16, func() error {
		x, y, err := r.coord()
		if err != nil {
			return err
		}
		return writeCoord(out, x, y)
	})
}

func (r *wkbReader) polygon(out *strings.Builder, want uint32) error {
	return r.list(out, want, 4, func() error { return r.points(out, wkbLineString) })
}

// list writes a counted list of items of at least size bytes each: "(a, b)",
// or EMPTY when the count is 0.
func (r *wkbReader) list(out *strings.Builder, want uint32, size int, item func() error) error {
	n, err := r.count(size)
	if err != nil {
		return err
	}
	if n == 0 {
		return r.empty(out, want)
	}
	out.WriteByte('(')
	for i := range n {
		if i > 0 {
			out.WriteString(", ")
		}
		if err := item(); err != nil {
			return err
		}
	}
	out.WriteByte(')')
	return nil
}

// writeCoords writes a single coordinate in parentheses: "(x y)".
func writeCoords(out *strings.Builder, x, y float64) error {
	out.WriteByte('(')
	if err := writeCoord(out, x, y); err != nil {
		return err
	}
	out.WriteByte(')')
	return nil
}

func writeCoord(out *strings.Builder, x, y float64) error {
	if !(x >= -180 && x <= 180) || !(y >= -90 && y <= 90) {
		return failure.Errorf("coordinate (%v %v) is not a WGS84 longitude in [-180, 180] and latitude in [-90, 90]", failure.Value(x), failure.Value(y))
	}
	out.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	out.WriteByte(' ')
	out.WriteString(strconv.FormatFloat(y, 'f', -1, 64))
	return nil
}
