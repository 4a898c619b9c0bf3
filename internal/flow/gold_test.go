package flow

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/schema"
)

var ordersChangelog = schema.Columns{
	{Name: "id", Type: schema.Int64}, {Name: "region", Type: schema.String}, {Name: "amount", Type: schema.Numeric},
	{Name: "qty", Type: schema.Int64}, {Name: "ordered_at", Type: schema.Timestamp}, {Name: "day", Type: schema.Date},
	{Name: "tags", Type: schema.String, Repeated: true}, {Name: "meta", Type: schema.JSON},
	{Name: "_cdc_op", Type: schema.String}, {Name: "_cdc_sequence", Type: schema.String},
	{Name: "_cdc_message_id", Type: schema.String}, {Name: "_cdc_ingested_at", Type: schema.Timestamp},
	{Name: "from", Type: schema.Timestamp},
}

const goldFlows = `
CREATE FLOW orders_current AS AUTO CDC INTO orders FROM STREAM(shop.orders) KEYS (id)
  APPLY AS DELETE WHEN _cdc_op = 'd' SEQUENCE BY _cdc_sequence STORED AS SCD TYPE 1;
CREATE FLOW orders_history AS AUTO CDC INTO orders_hist FROM STREAM(shop.orders) KEYS (id)
  SEQUENCE BY _cdc_sequence STORED AS SCD TYPE 2;
`

// bindGold parses the test flows and one materialized view and binds it.
func bindGold(t *testing.T, view string) (*BoundGold, error) {
	t.Helper()
	flows, golds, err := ParseAll("g.sql", goldFlows+view)
	if err != nil {
		return nil, err
	}
	if len(golds) != 1 {
		t.Fatalf("%d materialized views parsed, want 1", len(golds))
	}
	var bound []*Bound
	for _, f := range flows {
		b, err := Bind(f, ordersChangelog)
		if err != nil {
			t.Fatal(err)
		}
		bound = append(bound, b)
	}
	return BindGold(golds[0], bound, "cdc")
}

func TestGoldBinds(t *testing.T) {
	g, err := bindGold(t, `CREATE OR REFRESH MATERIALIZED VIEW sales.per_region COMMENT 'orders per region and hour' AS
SELECT region, window(ordered_at, '1 hour') AS hour, COUNT(*) AS orders, SUM(amount) AS revenue,
  COUNT(DISTINCT qty) AS sizes, MAX(qty) AS biggest, COUNTIF(qty > 10) AS bulk
FROM orders
WHERE region != 'test'
GROUP BY region, window(ordered_at, '1 hour')
HAVING orders > 1;`)
	if err != nil {
		t.Fatal(err)
	}
	if g.Name.String() != "sales.per_region" || g.Comment != "orders per region and hour" || g.Source.Name != "orders_current" {
		t.Errorf("name %s, comment %q, source %s", g.Name, g.Comment, g.Source.Name)
	}
	if g.Where != "`region` != 'test'" || strings.Join(g.Groups, "|") != "`region`" || g.Having != "`orders` > 1" {
		t.Errorf("where %q, groups %q, having %q", g.Where, g.Groups, g.Having)
	}
	if w := g.Window; w == nil || w.Time.Name != "ordered_at" || w.Size != time.Hour || w.Slide != time.Hour || w.Name != "hour" {
		t.Errorf("window %+v", g.Window)
	}
	var got []string
	for _, it := range g.Items {
		switch {
		case it.Window:
			got = append(got, it.Name+"=window")
		case it.Aggregate != "":
			got = append(got, it.Name+"="+it.Aggregate)
		default:
			got = append(got, it.Name+"=group "+g.Groups[it.Group])
		}
	}
	want := "region=group `region`|hour=window|orders=COUNT(*)|revenue=SUM(`amount`)|sizes=COUNT(DISTINCT `qty`)|biggest=MAX(`qty`)|bulk=COUNTIF(`qty` > 10)"
	if strings.Join(got, "|") != want {
		t.Errorf("items\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

func TestGoldForms(t *testing.T) {
	for _, tt := range []struct{ name, view, check string }{
		{"group by alias and ordinal", `CREATE MATERIALIZED VIEW v AS SELECT DATE(ordered_at) AS d, region AS r, COUNT(*) AS n FROM orders GROUP BY d, 2;`,
			"groups DATE(`ordered_at`)|`region`"},
		{"sliding window by its alias", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '10 minutes', '5 minutes') AS w, AVG(qty) AS q FROM orders GROUP BY w;`,
			"window 10m0s/5m0s w"},
		{"default window name, a date column", `CREATE MATERIALIZED VIEW v AS SELECT window(day, '1 week'), COUNT(*) AS n FROM orders GROUP BY window(day, '1 week');`,
			"window 168h0m0s/168h0m0s window"},
		{"a stream", `CREATE MATERIALIZED VIEW v AS SELECT _cdc_op, COUNT(*) AS events FROM STREAM(shop.orders) GROUP BY _cdc_op;`,
			"stream groups `_cdc_op`"},
		{"a session window per region", `CREATE MATERIALIZED VIEW v AS SELECT region, session_window(ordered_at, '30 minutes'), COUNT(*) AS n FROM orders GROUP BY region, 2;`,
			"window 30m0s/30m0s session_window"},
		{"a column named like a reserved word", `CREATE MATERIALIZED VIEW v AS SELECT ` + "`from`" + `, MAX(from) AS last, COUNT(*) AS n FROM orders GROUP BY from;`,
			"groups `from`"},
		{"a compound duration", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour 30 minutes') AS w, COUNT(*) AS n FROM orders GROUP BY 1;`,
			"window 1h30m0s/1h30m0s w"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g, err := bindGold(t, tt.view)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			switch {
			case strings.HasPrefix(tt.check, "groups"):
				got = "groups " + strings.Join(g.Groups, "|")
			case strings.HasPrefix(tt.check, "window"):
				got = "window " + g.Window.Size.String() + "/" + g.Window.Slide.String() + " " + g.Window.Name
			case strings.HasPrefix(tt.check, "stream"):
				if g.IsStream() {
					got = "stream groups " + strings.Join(g.Groups, "|")
				}
			}
			if got != tt.check {
				t.Errorf("got %q, want %q", got, tt.check)
			}
		})
	}
}

// Every refusal names the file, line and column and says why.
func TestGoldRefusals(t *testing.T) {
	line := strings.Count(goldFlows, "\n") + 1
	for _, tt := range []struct{ name, view, want string }{
		{"no group by", `CREATE MATERIALIZED VIEW v AS SELECT COUNT(*) AS n FROM orders;`, "expected GROUP BY"},
		{"a join", `CREATE MATERIALIZED VIEW v AS SELECT COUNT(*) AS n FROM orders JOIN x GROUP BY 1;`, "joins are not supported"},
		{"a subquery", `CREATE MATERIALIZED VIEW v AS SELECT region FROM orders WHERE id IN (SELECT 1) GROUP BY region;`, "may not hold a subquery"},
		{"order by", `CREATE MATERIALIZED VIEW v AS SELECT region FROM orders GROUP BY region ORDER BY region;`, "ORDER BY"},
		{"a history", `CREATE MATERIALIZED VIEW v AS SELECT region FROM orders_hist GROUP BY region;`, "is an SCD type 2 history"},
		{"no such target", `CREATE MATERIALIZED VIEW v AS SELECT region FROM order GROUP BY region;`, "did you mean orders?"},
		{"an unknown stream", `CREATE MATERIALIZED VIEW v AS SELECT COUNT(*) AS n FROM STREAM(shop.items) GROUP BY 1;`, "no flow reads that topic"},
		{"ungrouped column", `CREATE MATERIALIZED VIEW v AS SELECT region, qty FROM orders GROUP BY region;`, "`qty` is neither grouped nor aggregated"},
		{"unnamed aggregate", `CREATE MATERIALIZED VIEW v AS SELECT region, SUM(qty) FROM orders GROUP BY region;`, "name the aggregate"},
		{"a ratio", `CREATE MATERIALIZED VIEW v AS SELECT region, SUM(qty) / COUNT(*) AS r FROM orders GROUP BY region;`, "one aggregate call"},
		{"unsupported aggregate", `CREATE MATERIALIZED VIEW v AS SELECT region, STRING_AGG(region) AS s FROM orders GROUP BY region;`, "STRING_AGG is not supported"},
		{"nested aggregate", `CREATE MATERIALIZED VIEW v AS SELECT region, SUM(MAX(qty)) AS s FROM orders GROUP BY region;`, "may not hold an aggregate"},
		{"aggregate in where", `CREATE MATERIALIZED VIEW v AS SELECT region FROM orders WHERE SUM(qty) > 1 GROUP BY region;`, "WHERE may not hold an aggregate"},
		{"a window function", `CREATE MATERIALIZED VIEW v AS SELECT region FROM orders WHERE ROW_NUMBER() OVER () = 1 GROUP BY region;`, "window functions are not supported"},
		{"now", `CREATE MATERIALIZED VIEW v AS SELECT region FROM orders WHERE ordered_at > CURRENT_TIMESTAMP() GROUP BY region;`, "may not call CURRENT_TIMESTAMP"},
		{"group by an array", `CREATE MATERIALIZED VIEW v AS SELECT tags FROM orders GROUP BY tags;`, "cannot group by ARRAY<STRING>"},
		{"group by json", `CREATE MATERIALIZED VIEW v AS SELECT meta FROM orders GROUP BY meta;`, "cannot group by JSON"},
		{"window of a number", `CREATE MATERIALIZED VIEW v AS SELECT window(qty, '1 hour') AS w FROM orders GROUP BY 1;`, "not a TIMESTAMP, DATETIME or DATE"},
		{"a month window", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 month') AS w FROM orders GROUP BY 1;`, "months and years have no fixed length"},
		{"slide beyond size", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '5 minutes', '10 minutes') AS w FROM orders GROUP BY 1;`, "slides by at most its size"},
		{"two windows", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour') AS w FROM orders GROUP BY window(ordered_at, '1 hour'), window(ordered_at, '1 day');`, "second window"},
		{"window not grouped", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour') AS w, COUNT(*) AS n FROM orders GROUP BY region;`, "does not group by"},
		{"a session window with a slide", `CREATE MATERIALIZED VIEW v AS SELECT session_window(ordered_at, '30 minutes', '5 minutes') AS s FROM orders GROUP BY 1;`, "session_window takes (time column, 'gap')"},
		{"a session window and a window", `CREATE MATERIALIZED VIEW v AS SELECT session_window(ordered_at, '30 minutes') AS s FROM orders GROUP BY window(ordered_at, '30 minutes');`, "does not group by"},
		{"aggregate in having", `CREATE MATERIALIZED VIEW v AS SELECT region, COUNT(*) AS n FROM orders GROUP BY region HAVING COUNT(*) > 1;`, "name the aggregate in the SELECT list"},
		{"two columns one name", `CREATE MATERIALIZED VIEW v AS SELECT region, COUNT(*) AS region FROM orders GROUP BY region;`, "a second column named region"},
		{"a bad ordinal", `CREATE MATERIALIZED VIEW v AS SELECT region FROM orders GROUP BY 3;`, "no such SELECT item"},
		{"an unknown column", `CREATE MATERIALIZED VIEW v AS SELECT regoin FROM orders GROUP BY regoin;`, "did you mean region?"},
		{"a view named like a target", `CREATE MATERIALIZED VIEW orders AS SELECT region FROM orders GROUP BY region;`, "is also the view orders of flow orders_current"},
		{"a watermark without a window", `CREATE MATERIALIZED VIEW v AS SELECT region, COUNT(*) AS n FROM orders WATERMARK ordered_at DELAY OF INTERVAL 1 HOUR GROUP BY region;`, "needs a window(time, size[, slide])"},
		{"a watermark of another column", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour') AS w, COUNT(*) AS n FROM orders WATERMARK day DELAY OF INTERVAL 1 HOUR GROUP BY 1;`, "must be the window's time column, ordered_at"},
		{"a watermark of a session", `CREATE MATERIALIZED VIEW v AS SELECT session_window(ordered_at, '1 hour') AS s, COUNT(*) AS n FROM orders WATERMARK ordered_at DELAY OF INTERVAL 1 HOUR GROUP BY 1;`, "needs a window(time, size[, slide])"},
		{"a watermark of a month", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour') AS w, COUNT(*) AS n FROM orders WATERMARK ordered_at DELAY OF INTERVAL 30 DAYS GROUP BY 1;`, "not shorter than four weeks"},
		{"a watermark without a delay", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour') AS w, COUNT(*) AS n FROM orders WATERMARK ordered_at GROUP BY 1;`, "expected DELAY OF INTERVAL"},
		{"a watermark of a stream", `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour') AS w, COUNT(*) AS n FROM STREAM(shop.orders) WATERMARK ordered_at DELAY OF INTERVAL 1 HOUR GROUP BY 1;`, "needs a view compaction refreshes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bindGold(t, tt.view)
			if err == nil {
				if strings.Contains(tt.want, "is also the view orders") {
					return // checked by ParseFilesAll below
				}
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "g.sql:"+strconv.Itoa(line)+":") {
				t.Errorf("error %q, want g.sql:%d:... containing %q", err, line, tt.want)
			}
		})
	}
	_, errs := ParseFilesAll([]string{"g.sql"}, map[string]string{"g.sql": goldFlows + `CREATE MATERIALIZED VIEW orders AS SELECT region FROM orders GROUP BY region;`})
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "flow orders_current: its view orders is also the materialized view orders of materialized view orders") ||
		!strings.Contains(errs[1].Error(), "materialized view orders: its materialized view orders is also the view orders of flow orders_current") {
		t.Errorf("a view named like a target: %v", errs)
	}
}

// WATERMARK column DELAY OF INTERVAL, in both of Databricks' spellings of
// the interval.
func TestGoldWatermark(t *testing.T) {
	for _, delay := range []string{"INTERVAL 90 MINUTES", "INTERVAL '1 hour 30 minutes'"} {
		g, err := bindGold(t, `CREATE MATERIALIZED VIEW v AS SELECT window(ordered_at, '1 hour') AS w, COUNT(*) AS n FROM orders WATERMARK ordered_at DELAY OF `+delay+` GROUP BY 1;`)
		if err != nil {
			t.Fatal(err)
		}
		if g.Watermark == nil || g.Watermark.Delay != 90*time.Minute {
			t.Errorf("%s: watermark %+v", delay, g.Watermark)
		}
	}
}
