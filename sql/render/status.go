package render

import (
	"bytes"
	"fmt"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/flow"
)

// StatusDays is how far back the status view reads changelogs and
// compaction runs: the newest change and the tail are found among the rows
// ingested since, and a flow not compacted since shows no run.
const StatusDays = 7

// StatusMaxChangelogs is the most changelog reads the status view names:
// BigQuery allows 1,000 tables per query (views expanded), and the view
// also reads the report and dead-letter tables. A deployment of more flows
// reads freshness and tail from the compaction runs instead (a variable so
// a test can take that path with a few flows).
var StatusMaxChangelogs = 900

// StatusMaxView bounds the status view's query: BigQuery refuses a view
// whose query is longer than 256 K characters (a query of 1,024 K). Past
// it the view reads freshness from the compaction runs, and past it again
// the flows from catalog.FlowsTable instead of listing them (a variable so
// a test can take those paths with a few flows).
var StatusMaxView = 250_000

type statusFlow struct {
	Name, Target, Source, Kind string // string literals
	Changelog                  string // quoted table
}

// Status renders the query of the status view (catalog.StatusView): one row
// per flow with its freshness, tail, last compaction and dead letters. It
// names only the flows' changelogs and bqcdc's report and dead-letter
// tables, each read within a constant time bound, so BigQuery prunes every
// older partition. Snapshot flows have no changelog: their rows carry the
// last compaction run (with the version it applied and the rows it
// skipped) and no freshness or tail.
func Status(flows []*flow.Flow, loc catalog.Location) (string, error) {
	sql, _, err := StatusQuery(flows, loc)
	return sql, err
}

// StatusQuery is Status, also reporting whether the query reads the flows
// from catalog.FlowsTable (which FlowsTable's statements write): when
// listing them would make it longer than StatusMaxView.
func StatusQuery(flows []*flow.Flow, loc catalog.Location) (sql string, table bool, err error) {
	return StatusQueryWith(flows, nil, loc)
}

// StatusQueryWith is StatusQuery with a row for each materialized view of
// golds that compaction refreshes (kind 'materialized view'): the position
// its <name>_refreshed holds (watermark) and how far that trails the clock
// (lag_seconds), beside its source flow's last run. It reads the state's
// markers only (the blocks where its clustering column is NULL).
func StatusQueryWith(flows []*flow.Flow, golds []*flow.BoundGold, loc catalog.Location) (sql string, table bool, err error) {
	if len(flows) == 0 {
		return "", false, fmt.Errorf("rendering the status view: no flow")
	}
	d := statusData{
		Days:        StatusDays,
		Runs:        q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.CompactionRunsTable),
		DeadLetters: q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.DeadLetterTable),
	}
	for _, g := range golds {
		if g.Refreshable() != nil {
			continue
		}
		st, err := newGoldState(g, loc)
		if err != nil {
			return "", false, err
		}
		d.Golds = append(d.Golds, statusGold{Name: flow.QuoteString(loc.GoldDataset(g.Gold) + "." + g.Name.Table),
			Target: flow.QuoteString(loc.GoldDataset(g.Gold) + "." + catalog.GoldRefreshedName(g.Gold)),
			Source: flow.QuoteString(g.From.String()), Flow: flow.QuoteString(g.Source.Name), State: st.State, Cluster: st.Cluster})
	}
	for _, f := range flows {
		sf := statusFlowOf(f, loc)
		if _, changelog := f.ChangelogSource(); !changelog {
			d.Snapshots = append(d.Snapshots, sf)
			continue
		}
		d.Flows = append(d.Flows, sf)
	}
	d.FromRuns = len(d.Flows) > StatusMaxChangelogs
	for {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, "status.sql.tmpl", d); err != nil {
			return "", false, fmt.Errorf("rendering the status view: %w", err)
		}
		switch {
		case buf.Len() <= StatusMaxView || d.FlowsTable != "":
			return buf.String(), d.FlowsTable != "", nil
		case !d.FromRuns:
			d.FromRuns = true
		default:
			d.FlowsTable = q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.FlowsTable)
		}
	}
}

type statusData struct {
	Days              int
	Runs, DeadLetters string
	Flows, Snapshots  []statusFlow
	Golds             []statusGold
	FromRuns          bool
	FlowsTable        string // quoted; "": the flows are listed in the query
}

// statusGold is a row of a materialized view compaction refreshes.
type statusGold struct {
	Name, Target, Source, Flow string // string literals: the view, its refreshed view, the source target, the source flow
	State, Cluster             string // the quoted state table, its clustering column (NULL on markers)
}

func statusFlowOf(f *flow.Flow, loc catalog.Location) statusFlow {
	sf := statusFlow{Name: flow.QuoteString(f.Name), Target: flow.QuoteString(loc.Dataset(f) + "." + catalog.ViewName(f))}
	sf.Source = flow.QuoteString(f.Reads())
	if _, ok := f.ChangelogSource(); !ok {
		sf.Kind = "'snapshot'"
		return sf
	}
	sf.Changelog, sf.Kind = loc.ChangelogTable(f), "'stream'"
	return sf
}

// flowsChunk is how many flows one statement of FlowsTable lists: about
// 120 characters each, well inside a query's 1,024 K.
const flowsChunk = 4000

// FlowsTable renders the statements that write catalog.FlowsTable, the
// deployed flows the status view reads when they are too many to list in
// it (one row each: flow, target, source, kind). They fill a scratch
// table chunk by chunk, then replace the table with it in one statement,
// so a reader sees the old list or the new one, never part of it. DDL and
// DML of literals read no table: they bill nothing (the last reads the
// scratch table, a few hundred KB, billed 10 MB).
func FlowsTable(flows []*flow.Flow, loc catalog.Location) []string {
	table := q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.FlowsTable)
	next := q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.FlowsTable+"__next")
	var out []string
	for start := 0; start == 0 || start < len(flows); start += flowsChunk {
		var b bytes.Buffer
		if start == 0 {
			b.WriteString("CREATE OR REPLACE TABLE " + next + " AS\nSELECT * FROM UNNEST(ARRAY<STRUCT<flow STRING, target STRING, source STRING, kind STRING>>[")
		} else {
			b.WriteString("INSERT INTO " + next + " (flow, target, source, kind)\nSELECT * FROM UNNEST(ARRAY<STRUCT<flow STRING, target STRING, source STRING, kind STRING>>[")
		}
		for i, f := range flows[start:min(len(flows), start+flowsChunk)] {
			if i > 0 {
				b.WriteString(",")
			}
			sf := statusFlowOf(f, loc)
			b.WriteString("\n  (" + sf.Name + ", " + sf.Target + ", " + sf.Source + ", " + sf.Kind + ")")
		}
		b.WriteString("\n])")
		out = append(out, b.String())
	}
	return append(out,
		"CREATE OR REPLACE TABLE "+table+" AS SELECT * FROM "+next,
		"DROP TABLE "+next)
}
