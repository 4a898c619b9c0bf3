package catalog

import (
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/limits"
)

// CheckNames refuses a flow whose objects' names would exceed BigQuery's
// limits: the target's view, state and change tables (limits.MaxTableIDBytes)
// and its table functions (limits.MaxRoutineIDChars), at the target's
// file:line:column. BigQuery would refuse the object at apply time, after
// the flow's other objects were made.
func CheckNames(f *flow.Flow) *flow.Error {
	tables := []string{ViewName(f), StateName(f)}
	var routines []string
	switch {
	case f.IsSnapshot():
	case f.Bitemporal:
		routines = append(routines, AsOfFunctionName(f))
	default:
		tables = append(tables, ChangesName(f))
		routines = append(routines, AtFunctionName(f), ChangesFunctionName(f))
	}
	for _, t := range tables {
		if len(t) > limits.MaxTableIDBytes {
			return flowError(f, "target is too long: its table %s… would have %d bytes; BigQuery allows %d in a table id", t[:40], len(t), limits.MaxTableIDBytes)
		}
	}
	for _, r := range routines {
		if n := utf8.RuneCountInString(r); n > limits.MaxRoutineIDChars {
			return flowError(f, "target is too long: its table function %s… would have %d characters; BigQuery allows %d in a routine id (shorten the target to at most %d characters)",
				string([]rune(r)[:40]), n, limits.MaxRoutineIDChars, limits.MaxRoutineIDChars-(n-utf8.RuneCountInString(f.Target.Table)))
		}
	}
	return nil
}

func flowError(f *flow.Flow, format string, args ...any) *flow.Error {
	e := flow.Errorf(f.Target.Pos, format, args...)
	e.Flow = f.Name
	return e
}
