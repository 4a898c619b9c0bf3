package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/status"
)

// runStatus prints each flow's freshness, tail, last compaction and dead
// letters, and each source's changelog size, and fails when any is past a
// threshold (so it can gate a deploy or a cron job).
func runStatus(ctx context.Context, args []string) error {
	var t target
	th := status.Off
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	t.register(fs)
	fs.DurationVar(&th.MaxLag, "max-lag", 0, "fail when a flow's newest change is older than this (0: unchecked; a quiet source trips it too)")
	fs.Int64Var(&th.MaxTail, "max-tail", -1, "fail when more changelog rows than this wait after a flow's compaction watermark (-1: unchecked)")
	fs.DurationVar(&th.MaxCompactionAge, "max-compaction-age", 0, "fail when a flow's last compaction run is older than this, or missing (0: unchecked)")
	fs.Int64Var(&th.MaxDeadLetters, "max-dead-letters", -1, "fail when a topic dead-lettered more messages than this in the last day (-1: unchecked; 0: any)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var onlyFlows, onlySources names
	fs.Var(&onlyFlows, "flow", "report only this flow (repeatable)")
	fs.Var(&onlySources, "source", "report only the flows of this source: a topic, or a snapshot flow's dataset.table (repeatable)")
	if err := t.parse(ctx, fs, args); err != nil {
		return err
	}
	flows, bq, err := t.open(ctx)
	if err != nil {
		return err
	}
	defer bq.Close()
	if flows, err = selectFlows(flows, onlyFlows, onlySources); err != nil {
		return err
	}
	lister, err := clients.NewTableLister(ctx, t.BigQuery)
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := status.GatherWith(ctx, bq, catalog.Location{Project: t.BigQuery.Project, DefaultDataset: t.Dataset}, flows, status.Options{Lister: lister, Golds: goldsOf(t.golds, flows)})
	if err != nil {
		return err
	}
	problems := status.Check(&rep, th)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		if err := status.Write(os.Stdout, rep); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "read in %s\n", time.Since(start).Round(time.Millisecond))
	}
	if len(problems) > 0 {
		return t.notAll(fmt.Errorf("%d problem(s) past the thresholds", len(problems)))
	}
	return t.notAll(nil)
}

// selectFlows keeps the flows named in byName or reading a source of
// bySource (all when both are empty); a name or source that matches no
// flow is an error, naming it.
func selectFlows(flows []*flow.Flow, byName, bySource []string) ([]*flow.Flow, error) {
	if len(byName) == 0 && len(bySource) == 0 {
		return flows, nil
	}
	var out []*flow.Flow
	matched := map[string]bool{}
	for _, f := range flows {
		src := f.Reads()
		in := false
		if slices.Contains(byName, f.Name) {
			in, matched["flow "+f.Name] = true, true
		}
		if slices.Contains(bySource, src) {
			in, matched["source "+src] = true, true
		}
		if in {
			out = append(out, f)
		}
	}
	for _, n := range byName {
		if !matched["flow "+n] {
			return nil, fmt.Errorf("--flow %s: no deployed flow has that name", n)
		}
	}
	for _, s := range bySource {
		if !matched["source "+s] {
			return nil, fmt.Errorf("--source %s: no deployed flow reads it", s)
		}
	}
	return out, nil
}

// goldsOf keeps the materialized views over the selected flows' targets
// and topics.
// readsChangelogOf reports whether f reads the changelog of source topic src.
func readsChangelogOf(f *flow.Flow, src string) bool {
	s, ok := f.ChangelogSource()
	return ok && s == src
}

func goldsOf(golds []*flow.Gold, flows []*flow.Flow) []*flow.Gold {
	var out []*flow.Gold
	for _, g := range golds {
		for _, f := range flows {
			if strings.EqualFold(f.Target.Table, g.From.Table) && strings.EqualFold(f.Target.Dataset, g.From.Dataset) || readsChangelogOf(f, g.Stream.Name) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}
