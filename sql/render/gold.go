package render

import (
	"fmt"
	"strconv"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// goldData is what gold.sql.tmpl renders.
type goldData struct {
	Summary, File, Over string
	Source              string // the quoted target view, or the changelog of a stream
	Stream              bool
	Where, Having       string
	Window              *goldWindow
	Session             *goldSession
	Groups              []string // the GROUP BY expressions
	Grouped             []string // the grouped CTE's columns: keys, window, aggregates
	GroupBy             []string // ordinals of the grouped CTE's keys
	Items               []string
}

type goldSession struct {
	Time string   // the session's time as a TIMESTAMP expression
	Gap  int64    // microseconds
	Part []string // the group columns the sessions are per
}

type goldWindow struct {
	Time        string // the window's time as a TIMESTAMP expression
	Size, Slide int64  // microseconds
	Steps       int64  // the windows that may hold one time, minus one
}

// GoldView renders the view of a materialized view (gold flow).
func GoldView(g *flow.BoundGold, loc catalog.Location) (string, error) {
	d, err := goldViewData(g, loc)
	if err != nil {
		return "", err
	}
	buf := newSQLBuilder()
	if err := templates.ExecuteTemplate(buf, "gold.sql.tmpl", d); err != nil {
		return "", fmt.Errorf("rendering materialized view %s: %w", g.Name, err)
	}
	return buf.String(), nil
}

func goldViewData(g *flow.BoundGold, loc catalog.Location) (goldData, error) {
	d := goldData{
		Summary: fmt.Sprintf("materialized view %s over %s", g.Name, g.From),
		File:    g.Pos.File,
		Where:   g.Where,
		Having:  g.Having,
		Stream:  g.IsStream(),
		Groups:  g.Groups,
	}
	if d.Stream {
		d.Summary = fmt.Sprintf("materialized view %s over STREAM(%s)", g.Name, g.Stream.Name)
		d.Over = "every change event of " + g.Stream.Name
		d.Source = loc.ChangelogTable(g.Source.Flow)
	} else {
		d.Over = "the current rows of " + g.From.String() + " (flow " + g.Source.Name + ")"
		d.Source = loc.ViewTable(g.Source.Flow)
	}
	session := g.Window != nil && g.Window.Session
	for i, e := range g.Groups {
		if session {
			e = fmt.Sprintf("__g%d", i) // computed before the sessions are cut
		}
		d.Grouped = append(d.Grouped, fmt.Sprintf("%s AS __g%d", e, i))
	}
	keys := len(g.Groups)
	if w := g.Window; w != nil {
		t := q(w.Time.Name)
		if w.Time.Type != "TIMESTAMP" {
			t = "TIMESTAMP(" + t + ")" // DATE and DATETIME as UTC, as Spark's window casts them
		}
		size, slide := w.Size.Microseconds(), w.Slide.Microseconds()
		if session {
			d.Session = &goldSession{Time: t, Gap: size}
			for i := range g.Groups {
				d.Session.Part = append(d.Session.Part, fmt.Sprintf("__g%d", i))
			}
			d.Grouped = append(d.Grouped, "TIMESTAMP_MICROS(MIN(__t)) AS __window_start", fmt.Sprintf("TIMESTAMP_MICROS(MAX(__t) + %d) AS __window_end", size))
		} else {
			d.Window = &goldWindow{Time: t, Size: size, Slide: slide, Steps: (size+slide-1)/slide - 1}
			d.Grouped = append(d.Grouped, "__window_start", "__window_end")
			keys += 2
		}
	}
	for i := 1; i <= keys; i++ {
		d.GroupBy = append(d.GroupBy, strconv.Itoa(i))
	}
	if session {
		d.GroupBy = append(d.GroupBy, "__session")
	}
	aggs := 0
	for _, it := range g.Items {
		switch {
		case it.Window:
			d.Items = append(d.Items, "STRUCT(__window_start AS `start`, __window_end AS `end`) AS "+q(it.Name))
		case it.Aggregate != "":
			d.Items = append(d.Items, fmt.Sprintf("__a%d AS %s", aggs, q(it.Name)))
			d.Grouped = append(d.Grouped, fmt.Sprintf("%s AS __a%d", it.Aggregate, aggs))
			aggs++
		default:
			d.Items = append(d.Items, fmt.Sprintf("__g%d AS %s", it.Group, q(it.Name)))
		}
	}
	return d, nil
}
