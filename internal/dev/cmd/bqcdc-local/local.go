package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/compact"
	"github.com/bqcdc/bqcdc/internal/dev/demo"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/localopts"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/sql/render"
)

// runLocal runs `bqcdc local`: the whole pipeline on 127.0.0.1, and the demo.
func runLocal(ctx context.Context, args []string) error {
	var l localopts.Local
	if err := localopts.LocalFlags(&l).Parse(args); err != nil {
		return err
	}
	o := l.Stack
	level := slog.LevelWarn
	if l.Verbose {
		level = slog.LevelInfo
	}
	o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if !l.Once {
		o.OnCompaction = func(reports []compact.Report, err error) {
			printCompaction("scheduled compaction", reports, err)
		}
	} else {
		o.CompactEvery = 0 // --once compacts explicitly, after the demo
	}
	start := time.Now()
	st, err := localstack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Printf("bqcdc local stack up in %s (127.0.0.1 only)\n", time.Since(start).Round(time.Millisecond))
	fmt.Printf("  BigQuery REST       %s   (project %s, dataset %s)\n", st.BigQueryURL, st.Project, st.Dataset)
	fmt.Printf("  BigQuery Storage    %s\n", st.StorageAddr)
	fmt.Printf("  Pub/Sub             %s   (PUBSUB_EMULATOR_HOST=%s)\n", st.PubSubAddr, st.PubSubAddr)
	fmt.Printf("  Schema Registry     %s\n", st.RegistryURL)
	fmt.Printf("  Ingest function     %s/Ingest\n", st.FunctionURL)
	fmt.Printf("  Compact function    %s/Compact   (every %s; POST {\"flows\": [...]} to run it now)\n", st.FunctionURL, st.CompactEvery)
	fmt.Printf("  Metrics             %s/metrics   (JSON: the series Cloud Monitoring would receive)\n", st.FunctionURL)
	fmt.Printf("  Status              go run ./cmd/bqcdc status --project %s --dataset %s --bigquery-endpoint %s\n", st.Project, st.Dataset, st.BigQueryURL)
	for _, r := range st.Relays {
		fmt.Printf("  relay               %s -> %s (subscription %s, dead letters to %s)\n", r.Topic, r.URL, r.Subscription, localstack.DeadLetterTopic(r.Topic))
	}
	if l.Demo {
		if err := playDemo(ctx, st); err != nil {
			if l.Once {
				return err
			}
			fmt.Println("demo failed:", err)
		}
	}
	if l.Once {
		return nil
	}
	fmt.Println("\nserving; press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

func playDemo(ctx context.Context, st *localstack.Stack) error {
	fmt.Println("\nplaying the demo Debezium stream (MySQL inventory: customers, orders)")
	sent, err := publishDemo(ctx, st)
	if err != nil {
		return err
	}
	if err := printLanded(ctx, st); err != nil {
		return err
	}
	res, err := checkDemo(ctx, st, sent, "what landed is not what was sent")
	if err != nil {
		return err
	}
	fmt.Printf("check: every message accounted for; %d views equal the reference model, %d materialized views their SELECT\n", res.Views, res.Golds)
	if err := compactDemo(ctx, st, sent); err != nil {
		return err
	}
	fmt.Printf("check: after compaction the %d views still equal the reference model, the %d materialized views their SELECT\n", res.Views, res.Golds)
	if err := printViews(ctx, st); err != nil {
		return err
	}
	return printGolds(ctx, st)
}

// printGolds prints the materialized views (gold flows), a window as its
// two bounds (<window>_start, <window>_end) (the emulator cannot return a STRUCT of TIMESTAMPs:
// internal/emulator, concession 15).
func printGolds(ctx context.Context, st *localstack.Stack) error {
	for _, g := range st.BoundGolds {
		views := []string{st.Location().GoldView(g.Gold)}
		if g.Refreshable() == nil {
			views = append(views, st.Location().GoldRefreshed(g.Gold))
		}
		for _, view := range views {
			if err := printGold(ctx, st, g, view, "materialized view "+strings.ReplaceAll(view, "`", "")); err != nil {
				return err
			}
		}
		if render.GoldHasChanges(g) {
			// Its change feed, run as the function's body (the emulator
			// cannot call table functions: internal/emulator).
			sql, err := render.GoldChangesQuery(g, st.Location(), time.Time{}, time.Time{})
			if err != nil {
				return err
			}
			if err := printGold(ctx, st, g, "("+sql+")", "change feed "+catalog.GoldChangesName(g.Gold)+"(NULL, NULL)"); err != nil {
				return err
			}
		}
	}
	return nil
}

func printGold(ctx context.Context, st *localstack.Stack, g *flow.BoundGold, view, title string) error {
	sql := "SELECT * FROM " + view
	var cols []string
	for _, it := range g.Items {
		if it.Window {
			n := catalog.QuoteIdent(it.Name)
			sql = fmt.Sprintf("SELECT * EXCEPT (%s), %s.start AS %s, %s.`end` AS %s FROM %s", n, n, catalog.QuoteIdent(it.Name+"_start"), n, catalog.QuoteIdent(it.Name+"_end"), view)
			cols = append(cols, it.Name+"_start", it.Name+"_end")
			continue
		}
		cols = append(cols, it.Name)
	}
	order := "1"
	if strings.HasPrefix(title, "change feed") {
		cols = append(cols, catalog.ColChangeType, catalog.ColCommitPosition)
		order = catalog.ColCommitPosition + ", 1, " + catalog.ColChangeType + " DESC"
	}
	rows, err := demo.Query(ctx, st.BigQuery, sql+" ORDER BY "+order)
	if err != nil {
		return err
	}
	demo.PrintTable(os.Stdout, fmt.Sprintf("%s (gold flow over %s)", title, g.From), cols, rows)
	return nil
}

// publishDemo plays the stream, then the schema change in phases: the first
// v2 message evolves the changelog before anything else is written to it.
func publishDemo(ctx context.Context, st *localstack.Stack) ([]demo.Published, error) {
	var sent []demo.Published
	for _, events := range append([][]demo.Event{demo.Scenario()}, demo.Evolution()...) {
		published, err := demo.Produce(ctx, st, events)
		if err != nil {
			return nil, err
		}
		sent = append(sent, published...)
		// Up to the emulator's 60 s SQLite busy timeout, and then some.
		if err := demo.WaitDelivered(ctx, st, len(sent), 150*time.Second); err != nil {
			return nil, err
		}
	}
	return sent, nil
}

// printLanded prints the changelogs and the dead letters.
func printLanded(ctx context.Context, st *localstack.Stack) error {
	for _, t := range []struct{ topic, cols string }{
		{demo.Customers, "_cdc_op, _cdc_sequence, _cdc_schema_id, id, first_name, email, tier, balance, loyalty, birth_date, updated_at"},
		{demo.Orders, "_cdc_op, _cdc_sequence, order_number, order_date, purchaser, quantity, product_id, created_at"},
	} {
		table := catalog.TableName(t.topic)
		rows, err := demo.Query(ctx, st.BigQuery, fmt.Sprintf("SELECT %s FROM `%s.%s` ORDER BY _cdc_sequence, _cdc_message_id", t.cols, st.Dataset, table))
		if err != nil {
			return err
		}
		demo.PrintTable(os.Stdout, "changelog "+table, strings.Split(strings.ReplaceAll(t.cols, " ", ""), ","), rows)
	}
	dead, err := demo.Query(ctx, st.BigQuery, fmt.Sprintf("SELECT topic, message_id, stage, reason FROM `%s.%s`", st.Dataset, catalog.DeadLetterTable))
	if err != nil {
		return err
	}
	demo.PrintTable(os.Stdout, "dead letters", []string{"topic", "message_id", "stage", "reason"}, dead)
	return nil
}

// checkDemo checks that every message ended where it should and every view
// equals the reference model; failure is reported as problem.
func checkDemo(ctx context.Context, st *localstack.Stack, sent []demo.Published, problem string) (demo.Result, error) {
	res, err := demo.Check(ctx, st, sent)
	if err != nil {
		return res, err
	}
	fmt.Printf("\n%d messages published: %d changelog rows, %d tombstones counted, %d dead letters\n",
		res.Published, res.Rows, res.Tombstones, res.DeadLetters)
	if !res.OK() {
		for _, p := range res.Problems {
			fmt.Println("  PROBLEM:", p)
		}
		return res, errors.New(problem)
	}
	return res, nil
}

// compactDemo folds the changelogs into the state tables, checks that every
// view returns the same rows from state + tail, and that a second run with
// nothing new writes nothing.
func compactDemo(ctx context.Context, st *localstack.Stack, sent []demo.Published) error {
	time.Sleep(st.VisibilityLag) // let the watermark pass the demo's rows
	reports, err := st.Compact(ctx, nil)
	printCompaction("compaction", reports, err)
	if err != nil {
		return err
	}
	for _, r := range reports {
		if r.Outcome != compact.Compacted {
			return fmt.Errorf("compaction of %s: %s %s", r.Flow, r.Outcome, r.Error)
		}
	}
	if _, err := checkDemo(ctx, st, sent, "views changed after compaction"); err != nil {
		return err
	}
	// The refreshed materialized views are exact as of the change feed,
	// which the run materialized past every change.
	for _, g := range st.BoundGolds {
		if g.Refreshable() != nil {
			continue
		}
		diff, err := viewcheck.CheckGoldRefreshed(ctx, st.BigQuery, g, st.Location())
		if err != nil {
			return err
		}
		if diff != "" {
			return fmt.Errorf("%s_refreshed differs from its SELECT after compaction:\n%s", g.Name, diff)
		}
		fmt.Printf("check: %s_refreshed equals its SELECT\n", g.Name)
		if !render.GoldHasChanges(g) {
			continue
		}
		if diff, err = viewcheck.CheckGoldFeed(ctx, st.BigQuery, g, st.Location()); err != nil {
			return err
		}
		if diff != "" {
			return fmt.Errorf("%s_changes, replayed, differs from %s_refreshed:\n%s", g.Name, g.Name, diff)
		}
		fmt.Printf("check: %s_changes, replayed, equals %s_refreshed\n", g.Name, g.Name)
	}
	// The status view shows each refreshed view's position.
	refreshed := 0
	for _, g := range st.BoundGolds {
		if g.Refreshable() == nil {
			refreshed++
		}
	}
	rows, err := demo.Query(ctx, st.BigQuery, fmt.Sprintf("SELECT flow, watermark, lag_seconds FROM `%s`.`%s`.`%s` WHERE kind = 'materialized view'",
		st.Project, st.Dataset, catalog.StatusView))
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r["watermark"] == nil || r["lag_seconds"] == nil {
			return fmt.Errorf("%s shows materialized view %v with no refreshed position: %v", catalog.StatusView, r["flow"], r)
		}
	}
	if len(rows) != refreshed {
		return fmt.Errorf("%s shows %d materialized views, want the %d compaction refreshes: %v", catalog.StatusView, len(rows), refreshed, rows)
	}
	fmt.Printf("check: %s shows the %d refreshed materialized views' positions\n", catalog.StatusView, len(rows))
	reports, err = st.Compact(ctx, nil)
	printCompaction("compaction again, nothing new", reports, err)
	for _, r := range reports {
		if r.Outcome != compact.UpToDate && r.Outcome != compact.Idle {
			return fmt.Errorf("a second compaction of %s with nothing new did %q", r.Flow, r.Outcome)
		}
	}
	return nil
}

// printViews prints the views as compaction left them: it bound the flows
// to the evolved changelog, so they show the column schema v2 added.
func printViews(ctx context.Context, st *localstack.Stack) error {
	bound, _, err := viewcheck.Bind(ctx, st.BigQuery, st.Location(), st.Flows)
	if err != nil {
		return err
	}
	for _, b := range bound {
		rows, err := demo.Query(ctx, st.BigQuery, fmt.Sprintf("SELECT * FROM `%s.%s` ORDER BY 1, 2", st.Location().Dataset(b.Flow), b.Target.Table))
		if err != nil {
			return err
		}
		cols := b.Output.Names()
		if b.SCDType == 2 {
			cols = append(cols, catalog.StartAt, catalog.EndAt)
		}
		kind := fmt.Sprintf("SCD type %d", b.SCDType)
		if b.Bitemporal {
			cols, kind = append(cols, catalog.SystemStartAt, catalog.SystemEndAt), "bitemporal"
		}
		demo.PrintTable(os.Stdout, fmt.Sprintf("view %s (flow %s, %s)", b.Target, b.Name, kind), cols, rows)
	}
	for _, b := range bound {
		if b.Target.Table == "customers" {
			return printChangeFeed(ctx, st, b)
		}
	}
	return nil
}

// printChangeFeed prints the change feed of a flow, as
// SELECT * FROM <target>_changes(NULL, NULL) returns it in BigQuery. The
// emulator creates the table function but crashes when it is called, so the
// demo runs the function's body as a query (the same SQL).
func printChangeFeed(ctx context.Context, st *localstack.Stack, b *flow.Bound) error {
	sql, err := plan.For(b, st.Location()).ChangesQuery(time.Time{}, time.Time{})
	if err != nil {
		return err
	}
	rows, err := demo.Query(ctx, st.BigQuery, "SELECT * FROM ("+sql+") ORDER BY "+catalog.ColCommitPosition+", 1, "+catalog.ColChangeType+" DESC")
	if err != nil {
		return err
	}
	cols := append(b.Output.Names(), catalog.ColChangeType, catalog.ColCommitPosition)
	demo.PrintTable(os.Stdout, fmt.Sprintf("change feed: SELECT * FROM %s.%s(NULL, NULL)", st.Location().Dataset(b.Flow), catalog.ChangesFunctionName(b.Flow)), cols, rows)
	return nil
}

func printCompaction(title string, reports []compact.Report, err error) {
	fmt.Printf("\n%s:\n", title)
	for _, r := range reports {
		fmt.Println("  " + r.Line())
	}
	if err != nil {
		fmt.Println("  error:", err)
	}
}
