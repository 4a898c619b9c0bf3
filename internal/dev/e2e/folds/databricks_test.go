package folds

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/dev/testenv"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/google/go-cmp/cmp"
)

// The documented Databricks AUTO CDC example (users 123-126), from
// ../shared/acceptance/databricks-users.json: the rows are appended in the
// documented arrival order, and each view must equal the documented target.
type dbxCase struct {
	Name   string `json:"name"`
	Config struct {
		Keys         []string `json:"keys"`
		SequenceBy   string   `json:"sequence_by"`
		DeleteWhen   string   `json:"delete_when"`
		TruncateWhen *string  `json:"truncate_when"`
		Except       []string `json:"except_columns"`
		SCDType      int      `json:"scd_type"`
		TrackExcept  []string `json:"track_history_except"`
		TrackOn      []string `json:"track_history_on"`
		IgnoreNull   *bool    `json:"ignore_null_updates"`
		IgnoreNullOn []string `json:"ignore_null_updates_on"`
		ColumnList   []string `json:"column_list"`
	} `json:"config"`
	Input    []map[string]any `json:"input"`
	Expected []map[string]any `json:"expected"`
}

func loadDatabricksCases(t *testing.T) []dbxCase {
	t.Helper()
	b, err := os.ReadFile("../testdata/databricks-users.json") // a copy of ../shared/acceptance/databricks-users.json
	if err != nil {
		t.Fatalf("reading the acceptance data: %v", err)
	}
	var doc struct {
		Cases []dbxCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 4 {
		t.Fatalf("expected at least 4 cases, found %d", len(doc.Cases))
	}
	return doc.Cases
}

// flowText writes the case's configuration as a flow declaration.
func flowText(c dbxCase, source string) string {
	cfg := c.Config
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE FLOW %s AS AUTO CDC INTO %s\nFROM STREAM(`%s`)\nKEYS (%s)\n", c.Name, c.Name, source, strings.Join(cfg.Keys, ", "))
	fmt.Fprintf(&b, "APPLY AS DELETE WHEN %s\n", cfg.DeleteWhen)
	if cfg.TruncateWhen != nil && cfg.SCDType == 1 {
		fmt.Fprintf(&b, "APPLY AS TRUNCATE WHEN %s\n", *cfg.TruncateWhen)
	}
	fmt.Fprintf(&b, "SEQUENCE BY %s\n", cfg.SequenceBy)
	except := append(append([]string{}, cfg.Except...), metadataNames()...)
	fmt.Fprintf(&b, "COLUMNS * EXCEPT (%s)\nSTORED AS SCD TYPE %d", strings.Join(except, ", "), cfg.SCDType)
	if len(cfg.TrackExcept) > 0 {
		fmt.Fprintf(&b, "\nTRACK HISTORY ON * EXCEPT (%s)", strings.Join(cfg.TrackExcept, ", "))
	}
	if len(cfg.TrackOn) > 0 {
		fmt.Fprintf(&b, "\nTRACK HISTORY ON (%s)", strings.Join(cfg.TrackOn, ", "))
	}
	return b.String() + ";\n"
}

func metadataNames() []string {
	return catalog.MetadataColumns().Names()
}

func TestDatabricksDocumentedExample(t *testing.T) {
	for i, c := range loadDatabricksCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			e := testenv.New(t, stack, testenv.Project("dbx", int64(i)))
			source := "dbx." + c.Name
			bound := e.ApplySourceFlows(t, c.Name+".sql", flowText(c, source), source, testenv.UsersImage)
			var rows []map[string]any
			start := time.Now().Add(-time.Hour)
			for i, in := range c.Input {
				row := map[string]any{
					catalog.ColMessageID:  fmt.Sprintf("msg-%03d", i),
					catalog.ColIngestedAt: start.Add(time.Duration(i) * time.Second).UnixMicro(),
				}
				for k, v := range in {
					switch x := v.(type) {
					case float64:
						row[k] = int64(x)
					case string:
						row[k] = x
					}
				}
				rows = append(rows, row)
			}
			e.AppendRows(t, source, rows)

			got, err := viewcheck.Actual(context.Background(), e.BQ, bound[0], e.Loc)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, e := range c.Expected {
				var parts []string
				for _, col := range bound[0].Output.Names() {
					parts = append(parts, col+"="+viewcheck.CanonJSON(e[col]))
				}
				if c.Config.SCDType == 2 {
					parts = append(parts, "__START_AT="+viewcheck.CanonJSON(e["__START_AT"]), "__END_AT="+viewcheck.CanonJSON(e["__END_AT"]))
				}
				want = append(want, strings.Join(parts, " "))
			}
			sort.Strings(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("view %s differs from the documented target (-want +got):\n%s", c.Name, d)
			}
		})
	}
}

// canonJSON renders an expected JSON value as viewcheck.Canon renders the
// BigQuery value (numbers in this data are INT64).
