package model

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/civil"
)

// GoldSpec is a materialized view whose groups and aggregate arguments are
// columns: what the reference evaluates (the SELECT over the source's rows,
// as BigQuery would).
type GoldSpec struct {
	Groups []string    // grouping columns
	Window *GoldWindow // nil: none
	Items  []GoldItem  // the output columns, in order
}

// GoldWindow is window(Column, Size, Slide): windows [s, s+Size) for every
// s that is a multiple of Slide since the Unix epoch; or, with Session,
// session_window(Column, Size): per group, times in order, a time more
// than Size after the one before it starts a session, which ends at its
// last time plus Size.
type GoldWindow struct {
	Column      string
	Size, Slide time.Duration
	Session     bool
}

// GoldItem is an output column: a group (Group ≥ 0, its index in Groups),
// the window (Window), or an aggregate Func over Column ("" for COUNT(*)).
type GoldItem struct {
	Name     string
	Group    int
	Window   bool
	Func     string
	Column   string
	Distinct bool
}

// Gold evaluates spec over rows; each result row maps the output names to
// values (the window as [2]time.Time). Groups without rows do not exist;
// a row whose window time is NULL is in no window.
func Gold(spec GoldSpec, rows []map[string]any) []map[string]any {
	type group struct {
		keys   []any
		window [2]time.Time
		rows   []map[string]any
	}
	groups := map[string]*group{}
	var order []string
	add := func(keys []any, w [2]time.Time, r map[string]any) {
		id := fmt.Sprintf("%#v|%v", keys, w)
		g, ok := groups[id]
		if !ok {
			g = &group{keys: keys, window: w}
			groups[id] = g
			order = append(order, id)
		}
		g.rows = append(g.rows, r)
	}
	if w := spec.Window; w != nil && w.Session {
		rows = sessions(spec, rows)
	}
	for _, r := range rows {
		keys := make([]any, len(spec.Groups))
		for i, c := range spec.Groups {
			keys[i] = r[c]
		}
		if w := spec.Window; w != nil && w.Session {
			add(keys, r[sessionKey].([2]time.Time), r)
			continue
		}
		if spec.Window == nil {
			add(keys, [2]time.Time{}, r)
			continue
		}
		t, ok := asTime(r[spec.Window.Column])
		if !ok {
			continue
		}
		us := t.UnixMicro()
		size, slide := spec.Window.Size.Microseconds(), spec.Window.Slide.Microseconds()
		first := us - ((us%slide)+slide)%slide
		for s := first; s+size > us; s -= slide {
			add(keys, [2]time.Time{time.UnixMicro(s).UTC(), time.UnixMicro(s + size).UTC()}, r)
		}
	}
	sort.Strings(order)
	var out []map[string]any
	for _, id := range order {
		g := groups[id]
		row := map[string]any{}
		for _, it := range spec.Items {
			switch {
			case it.Window:
				row[it.Name] = g.window
			case it.Group >= 0 && it.Func == "":
				row[it.Name] = g.keys[it.Group]
			default:
				row[it.Name] = aggregate(it, g.rows)
			}
		}
		out = append(out, row)
	}
	return out
}

// sessionKey holds, in a copy of each row, the bounds of its session.
const sessionKey = "\x00session"

// sessions cuts each group's rows into sessions, returning copies of the
// rows that have a time, each with its session's bounds.
func sessions(spec GoldSpec, rows []map[string]any) []map[string]any {
	type timed struct {
		t time.Time
		r map[string]any
	}
	byGroup := map[string][]timed{}
	var order []string
	for _, r := range rows {
		t, ok := asTime(r[spec.Window.Column])
		if !ok {
			continue
		}
		keys := make([]any, len(spec.Groups))
		for i, c := range spec.Groups {
			keys[i] = r[c]
		}
		id := fmt.Sprintf("%#v", keys)
		if _, seen := byGroup[id]; !seen {
			order = append(order, id)
		}
		byGroup[id] = append(byGroup[id], timed{t, r})
	}
	var out []map[string]any
	for _, id := range order {
		g := byGroup[id]
		sort.SliceStable(g, func(i, j int) bool { return g[i].t.Before(g[j].t) })
		for i := 0; i < len(g); {
			j := i + 1
			for j < len(g) && !g[j].t.After(g[j-1].t.Add(spec.Window.Size)) {
				j++
			}
			bounds := [2]time.Time{g[i].t, g[j-1].t.Add(spec.Window.Size)}
			for _, e := range g[i:j] {
				c := make(map[string]any, len(e.r)+1)
				for k, v := range e.r {
					c[k] = v
				}
				c[sessionKey] = bounds
				out = append(out, c)
			}
			i = j
		}
	}
	return out
}

func asTime(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), true
	case civil.Date:
		return t.In(time.UTC), true
	case civil.DateTime:
		return t.In(time.UTC), true
	}
	return time.Time{}, false
}

// aggregate computes one aggregate over a group's rows, ignoring NULL
// arguments as SQL does.
func aggregate(it GoldItem, rows []map[string]any) any {
	if it.Func == "COUNT" && it.Column == "" {
		return int64(len(rows))
	}
	var vals []any
	seen := map[string]bool{}
	for _, r := range rows {
		v := r[it.Column]
		if v == nil {
			continue
		}
		if it.Distinct || it.Func == "APPROX_COUNT_DISTINCT" {
			k := fmt.Sprintf("%#v", normal(v))
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		vals = append(vals, v)
	}
	switch it.Func {
	case "COUNT", "APPROX_COUNT_DISTINCT":
		return int64(len(vals))
	case "COUNTIF":
		n := int64(0)
		for _, v := range vals {
			if v == true {
				n++
			}
		}
		return n
	}
	if len(vals) == 0 {
		return nil
	}
	switch it.Func {
	case "MIN", "MAX", "ANY_VALUE", "LOGICAL_AND", "LOGICAL_OR":
		best := vals[0]
		for _, v := range vals[1:] {
			c := Compare(normal(v), normal(best))
			if (it.Func == "MIN" || it.Func == "LOGICAL_AND") && c < 0 || (it.Func == "MAX" || it.Func == "LOGICAL_OR") && c > 0 {
				best = v
			}
		}
		return best
	case "SUM", "AVG":
		sum := new(big.Rat)
		for _, v := range vals {
			sum.Add(sum, rat(v))
		}
		if it.Func == "AVG" {
			avg := new(big.Rat).Quo(sum, big.NewRat(int64(len(vals)), 1))
			if _, isRat := vals[0].(*big.Rat); isRat {
				return roundScale9(avg) // AVG of NUMERIC is NUMERIC: 9 decimal places
			}
			f, _ := avg.Float64()
			return f
		}
		if _, isInt := vals[0].(int64); isInt {
			return sum.Num().Int64()
		}
		return sum
	}
	panic("model.Gold: aggregate " + it.Func)
}

// roundScale9 rounds r to 9 decimal places, half away from zero, as
// BigQuery rounds a NUMERIC result.
func roundScale9(r *big.Rat) *big.Rat {
	scaled := new(big.Rat).Mul(r, big.NewRat(1_000_000_000, 1))
	q, m := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
	if new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2)).Cmp(scaled.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(scaled.Sign())))
	}
	return new(big.Rat).SetFrac(q, big.NewInt(1_000_000_000))
}

func rat(v any) *big.Rat {
	switch x := v.(type) {
	case int64:
		return big.NewRat(x, 1)
	case float64:
		r, _ := new(big.Rat).SetString(fmt.Sprint(x))
		return r
	case *big.Rat:
		return x
	}
	panic(fmt.Sprintf("model.Gold: cannot sum %T", v))
}

// normal makes values of one column comparable (booleans as 0 and 1).
func normal(v any) any {
	switch x := v.(type) {
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case time.Time:
		return x.UTC()
	}
	return v
}

// GoldRow renders a row of Gold or of the view (as the BigQuery client
// returns it) in the items' order, for comparison: floats to 9 significant
// digits, windows as their bounds.
func GoldRow(spec GoldSpec, row map[string]any) string {
	parts := make([]string, len(spec.Items))
	for i, it := range spec.Items {
		parts[i] = it.Name + "=" + goldValue(row[it.Name])
	}
	return strings.Join(parts, " ")
}

func goldValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return fmt.Sprintf("%.9g", x)
	case *big.Rat:
		return x.RatString()
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case [2]time.Time:
		return "[" + goldValue(x[0]) + "," + goldValue(x[1]) + ")"
	}
	return fmt.Sprint(v)
}
