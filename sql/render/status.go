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

type statusFlow struct {
	Name, Target, Source string // string literals
	Changelog            string // quoted table
}

// Status renders the query of the status view (catalog.StatusView): one row
// per flow with its freshness, tail, last compaction and dead letters. It
// names only the flows' changelogs and bqcdc's report and dead-letter
// tables, each read within a constant time bound, so BigQuery prunes every
// older partition. Snapshot flows have no changelog: their rows carry the
// last compaction run (with the version it applied and the rows it
// skipped) and no freshness or tail.
func Status(flows []*flow.Flow, loc catalog.Location) (string, error) {
	if len(flows) == 0 {
		return "", fmt.Errorf("rendering the status view: no flow")
	}
	d := struct {
		Days              int
		Runs, DeadLetters string
		Flows, Snapshots  []statusFlow
		FromRuns          bool
	}{
		Days:        StatusDays,
		Runs:        q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.CompactionRunsTable),
		DeadLetters: q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.DeadLetterTable),
	}
	for _, f := range flows {
		sf := statusFlow{Name: flow.QuoteString(f.Name), Target: flow.QuoteString(loc.Dataset(f) + "." + catalog.ViewName(f))}
		if f.IsSnapshot() {
			sf.Source = flow.QuoteString(f.Snapshot.String())
			d.Snapshots = append(d.Snapshots, sf)
			continue
		}
		sf.Source, sf.Changelog = flow.QuoteString(f.Source.Name), loc.ChangelogTable(f)
		d.Flows = append(d.Flows, sf)
	}
	d.FromRuns = len(d.Flows) > StatusMaxChangelogs
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "status.sql.tmpl", d); err != nil {
		return "", fmt.Errorf("rendering the status view: %w", err)
	}
	return buf.String(), nil
}
