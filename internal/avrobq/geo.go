package avrobq

import (
	"fmt"
	"strings"
)

// BigQuery's GEOGRAPHY holds WGS84 longitude/latitude only. Debezium's
// spatial records carry the source's SRID: 4326 is WGS84, and 0 (no SRID,
// or MySQL's default) is taken as WGS84 coordinates too. Any other SRID is
// refused rather than stored with the wrong meaning.
func sridProblem(srid int64) error {
	if srid != 0 && srid != 4326 {
		return fmt.Errorf("geometry has SRID %d; BigQuery GEOGRAPHY holds WGS84 (SRID 4326) coordinates only", srid)
	}
	return nil
}

// geometryConv converts io.debezium.data.geometry.Geometry and Geography,
// records {wkb bytes, srid optional int}, to WKT. The WKB may be PostGIS's
// EWKB, whose SRID flag and SRID are checked too.
func geometryConv(v any) (any, error) {
	m, err := spatialRecord(v, "geometry record")
	if err != nil {
		return nil, err
	}
	wkb, ok := plain(m["wkb"]).([]byte)
	if !ok {
		return nil, badType("geometry wkb bytes", m["wkb"])
	}
	wkt, err := WKBToWKT(wkb)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrValue, err)
	}
	return wkt, nil
}

// pointConv converts io.debezium.data.geometry.Point, a record {x double,
// y double, wkb optional bytes, srid optional int} (PostgreSQL POINT), to
// WKT from x and y.
func pointConv(v any) (any, error) {
	m, err := spatialRecord(v, "point record")
	if err != nil {
		return nil, err
	}
	x, okx := plain(m["x"]).(float64)
	y, oky := plain(m["y"]).(float64)
	if !okx || !oky {
		return nil, badType("point x and y doubles", v)
	}
	var b strings.Builder
	b.WriteString("POINT")
	if err := writeCoords(&b, x, y); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrValue, err)
	}
	return b.String(), nil
}

// spatialRecord is v as one of Debezium's spatial records (what), whose
// srid, when set, must pass sridProblem.
func spatialRecord(v any, what string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badType(what, v)
	}
	s := plain(m["srid"])
	if s == nil {
		return m, nil
	}
	srid, ok := Integer(s)
	if !ok {
		return nil, badType("srid int", s)
	}
	if err := sridProblem(srid); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrValue, err)
	}
	return m, nil
}
