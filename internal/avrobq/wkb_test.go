package avrobq

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// wkb builds well-known binary in one byte order.
type wkb struct {
	b     []byte
	order binary.AppendByteOrder
}

func newWKB(little bool) *wkb {
	if little {
		return &wkb{order: binary.LittleEndian}
	}
	return &wkb{order: binary.BigEndian}
}

func (w *wkb) header(typ uint32) *wkb {
	if w.order == binary.LittleEndian {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
	return w.u32(typ)
}

func (w *wkb) u32(v uint32) *wkb { w.b = w.order.AppendUint32(w.b, v); return w }

func (w *wkb) xy(c ...float64) *wkb {
	for _, f := range c {
		w.b = w.order.AppendUint64(w.b, math.Float64bits(f))
	}
	return w
}

func (w *wkb) raw(b []byte) *wkb { w.b = append(w.b, b...); return w }

func wkbPointLE(x, y float64) []byte { return newWKB(true).header(1).xy(x, y).b }

func ewkbPointLE(srid uint32, x, y float64) []byte {
	return newWKB(true).header(1|ewkbSRID).u32(srid).xy(x, y).b
}

// geometries builds one geometry of each kind; little picks the byte order
// of the outer geometry, and members use the other order, as WKB allows.
func geometries(little bool) []struct {
	name, wkt string
	wkb       []byte
} {
	o := func() *wkb { return newWKB(little) }
	m := func() *wkb { return newWKB(!little) }
	ring := func(w *wkb) *wkb { return w.u32(4).xy(0, 0, 10, 0, 10, 10, 0, 0) }
	hole := func(w *wkb) *wkb { return w.u32(4).xy(1, 1, 2, 1, 2, 2, 1, 1) }
	return []struct {
		name, wkt string
		wkb       []byte
	}{
		{"point", "POINT(30 10)", o().header(1).xy(30, 10).b},
		{"point with fractions and negatives", "POINT(-0.000001 89.999999999)", o().header(1).xy(-0.000001, 89.999999999).b},
		{"point keeps every digit", "POINT(0.1 0.30000000000000004)", o().header(1).xy(0.1, math.Nextafter(0.3, 1)).b},
		{"empty point", "POINT EMPTY", o().header(1).xy(math.NaN(), math.NaN()).b},
		{"linestring", "LINESTRING(30 10, 10 30, 40 40)", o().header(2).u32(3).xy(30, 10, 10, 30, 40, 40).b},
		{"empty linestring", "LINESTRING EMPTY", o().header(2).u32(0).b},
		{"polygon", "POLYGON((0 0, 10 0, 10 10, 0 0))", ring(o().header(3).u32(1)).b},
		{"polygon with hole", "POLYGON((0 0, 10 0, 10 10, 0 0), (1 1, 2 1, 2 2, 1 1))", hole(ring(o().header(3).u32(2))).b},
		{"empty polygon", "POLYGON EMPTY", o().header(3).u32(0).b},
		{"multipoint", "MULTIPOINT((10 40), (40 30))", o().header(4).u32(2).raw(m().header(1).xy(10, 40).b).raw(m().header(1).xy(40, 30).b).b},
		{"multipoint with empty member", "MULTIPOINT(EMPTY, (1 2))", o().header(4).u32(2).raw(m().header(1).xy(math.NaN(), math.NaN()).b).raw(m().header(1).xy(1, 2).b).b},
		{"multilinestring", "MULTILINESTRING((10 10, 20 20), (40 40, 30 30))",
			o().header(5).u32(2).raw(m().header(2).u32(2).xy(10, 10, 20, 20).b).raw(m().header(2).u32(2).xy(40, 40, 30, 30).b).b},
		{"multipolygon", "MULTIPOLYGON(((0 0, 10 0, 10 10, 0 0)), ((0 0, 10 0, 10 10, 0 0), (1 1, 2 1, 2 2, 1 1)))",
			o().header(6).u32(2).raw(ring(m().header(3).u32(1)).b).raw(hole(ring(m().header(3).u32(2))).b).b},
		{"empty multipolygon", "MULTIPOLYGON EMPTY", o().header(6).u32(0).b},
		{"geometrycollection", "GEOMETRYCOLLECTION(POINT(4 6), LINESTRING(4 6, 7 10), GEOMETRYCOLLECTION(POINT(1 2)))",
			o().header(7).u32(3).raw(m().header(1).xy(4, 6).b).raw(m().header(2).u32(2).xy(4, 6, 7, 10).b).
				raw(o().header(7).u32(1).raw(m().header(1).xy(1, 2).b).b).b},
		{"empty geometrycollection (Debezium's empty geometry)", "GEOMETRYCOLLECTION EMPTY", o().header(7).u32(0).b},
		{"EWKB polygon with SRID 4326", "POLYGON((0 0, 10 0, 10 10, 0 0))", ring(o().header(3 | ewkbSRID).u32(4326).u32(1)).b},
	}
}

func TestWKBToWKT(t *testing.T) {
	for _, little := range []bool{true, false} {
		order := map[bool]string{true: "little endian", false: "big endian"}[little]
		for _, g := range geometries(little) {
			t.Run(g.name+", "+order, func(t *testing.T) {
				got, err := WKBToWKT(g.wkb)
				if err != nil {
					t.Fatal(err)
				}
				if got != g.wkt {
					t.Errorf("got  %s\nwant %s", got, g.wkt)
				}
			})
		}
	}
	// Debezium's own constant for GEOMETRYCOLLECTION EMPTY.
	if got, err := WKBToWKT([]byte{0x01, 0x07, 0, 0, 0, 0, 0, 0, 0}); err != nil || got != "GEOMETRYCOLLECTION EMPTY" {
		t.Errorf("Debezium's empty geometry: %q, %v", got, err)
	}
}

func TestWKBToWKTRefuses(t *testing.T) {
	le := func() *wkb { return newWKB(true) }
	point := le().header(1).xy(1, 2).b
	for _, tc := range []struct {
		name, why string
		wkb       []byte
	}{
		{"empty input", "ends early", nil},
		{"bad byte order", "byte order 2", append([]byte{2}, point[1:]...)},
		{"truncated point", "ends early", point[:len(point)-1]},
		{"trailing bytes", "1 bytes after", append(append([]byte{}, point...), 0)},
		{"unknown type", "unknown WKB geometry type 8", le().header(8).b},
		{"EWKB Z", "Z or M", le().header(1|ewkbZ).xy(1, 2, 3).b},
		{"ISO WKB Z", "Z or M", le().header(1001).xy(1, 2, 3).b},
		{"ISO WKB M", "Z or M", le().header(2001).xy(1, 2, 3).b},
		{"EWKB SRID 3857", "SRID 3857", le().header(1|ewkbSRID).u32(3857).xy(1, 2).b},
		{"huge count", "exceeds", le().header(2).u32(math.MaxUint32).xy(1, 2).b},
		{"multipoint holding a linestring", "MULTIPOINT holds a LINESTRING", le().header(4).u32(1).raw(le().header(2).u32(0).b).b},
		{"latitude past the pole", "latitude", le().header(1).xy(10, 90.5).b},
		{"longitude past 180", "longitude", le().header(2).u32(2).xy(0, 0, 180.1, 0).b},
		{"NaN coordinate", "longitude", le().header(1).xy(math.NaN(), 1).b},
		{"infinite coordinate", "longitude", le().header(1).xy(math.Inf(1), 1).b},
		{"collections nested too deep", "nested deeper", deepCollection(40)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WKBToWKT(tc.wkb)
			if err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("WKBToWKT = %q, %v; want an error containing %q", got, err, tc.why)
			}
		})
	}
}

func deepCollection(depth int) []byte {
	b := newWKB(true).header(1).xy(1, 2).b
	for range depth {
		b = newWKB(true).header(7).u32(1).raw(b).b
	}
	return b
}

func TestGeometryErrorsAreErrValue(t *testing.T) {
	for _, in := range []map[string]any{
		{"wkb": wkbPointLE(1, 2), "srid": 3857},
		{"wkb": []byte{1, 2}},
		{"wkb": ewkbPointLE(27700, 1, 2)},
	} {
		_, err := geometryConv(in)
		if !errors.Is(err, ErrValue) {
			t.Errorf("geometryConv(%v) = %v, want ErrValue", in, err)
		}
	}
	_, err := geometryConv(map[string]any{"wkb": wkbPointLE(1, 2), "srid": 3857})
	if err == nil || !strings.Contains(err.Error(), "SRID 3857") {
		t.Errorf("the error does not name the SRID: %v", err)
	}
}
