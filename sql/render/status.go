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

type statusFlow struct {
	Name, Target, Source string // string literals
	Changelog            string // quoted table
}

// Status renders the query of the status view (catalog.StatusView): one row
// per flow with its freshness, tail, last compaction and dead letters. It
// names only the flows' changelogs and bqcdc's report and dead-letter
// tables, each read within a constant time bound, so BigQuery prunes every
// older partition. Snapshot flows have no changelog and are left out (their
// compaction runs are in catalog.CompactionStateView); StatusFlows says
// which flows it shows.
func Status(flows []*flow.Flow, loc catalog.Location) (string, error) {
	flows = StatusFlows(flows)
	if len(flows) == 0 {
		return "", fmt.Errorf("rendering the status view: no change-stream flow")
	}
	d := struct {
		Days              int
		Runs, DeadLetters string
		Flows             []statusFlow
	}{
		Days:        StatusDays,
		Runs:        q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.CompactionRunsTable),
		DeadLetters: q(loc.Project) + "." + q(loc.DefaultDataset) + "." + q(catalog.DeadLetterTable),
	}
	for _, f := range flows {
		d.Flows = append(d.Flows, statusFlow{Name: flow.QuoteString(f.Name), Target: flow.QuoteString(loc.Dataset(f) + "." + catalog.ViewName(f)),
			Source: flow.QuoteString(f.Source.Name), Changelog: loc.ChangelogTable(f)})
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "status.sql.tmpl", d); err != nil {
		return "", fmt.Errorf("rendering the status view: %w", err)
	}
	return buf.String(), nil
}

// StatusFlows are the flows the status view shows: those reading a topic.
func StatusFlows(flows []*flow.Flow) []*flow.Flow {
	var out []*flow.Flow
	for _, f := range flows {
		if !f.IsSnapshot() {
			out = append(out, f)
		}
	}
	return out
}
