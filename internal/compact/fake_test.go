package compact

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/flow"
	"github.com/bqcdc/bqcdc/internal/plan"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/schema/bqschema"
	"google.golang.org/api/googleapi"
)

// fakeBQ is a Warehouse and Objects that keeps table metadata in memory and
// answers the compaction statements by what they are (their header
// comments), with the rows a test scripts per table. It records every
// statement and call, so tests assert what a run asked of BigQuery.
type fakeBQ struct {
	mu     sync.Mutex
	tables map[string]*bigquery.TableMetadata // "dataset.table"
	// stats answers a flow's statistics query, by state table.
	stats map[string]map[string]bigquery.Value
	// marker answers a state's marker query, by state table.
	marker map[string]map[string]bigquery.Value
	// first answers the query of a flow's first position (nil: none).
	first bigquery.Value
	// touched answers the query of the groups a refresh touches.
	touched []bigquery.Value
	// fail makes statements whose text holds the key fail with the error,
	// the given number of times (-1: always).
	fail map[string]failure

	queries []string
	steps   []string // each query's step (Stmt.Step), in order
	views   []string // "flow@hint"
	states  []string // flows whose State was called
	reads   []string // tables whose Metadata was read, "dataset.table"
	lists   []string // datasets listed
	// ledger answers the append ledger's query: each source's furthest
	// cover; created are the tables' creation times the listing shows.
	ledger  map[string]time.Time
	created map[string]time.Time
}

type failure struct {
	err   error
	times int
}

func newFake() *fakeBQ {
	return &fakeBQ{tables: map[string]*bigquery.TableMetadata{}, stats: map[string]map[string]bigquery.Value{},
		marker: map[string]map[string]bigquery.Value{}, fail: map[string]failure{}, created: map[string]time.Time{}}
}

func (f *fakeBQ) Query(_ context.Context, st Stmt) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sql := st.SQL
	f.queries = append(f.queries, sql)
	f.steps = append(f.steps, st.Step)
	for key, fl := range f.fail {
		if strings.Contains(sql, key) && fl.times != 0 {
			if fl.times > 0 {
				fl.times--
				f.fail[key] = fl
			}
			return Result{}, fl.err
		}
	}
	switch kindOf(st.Step) {
	case "stats":
		for table, row := range f.stats {
			if strings.Contains(sql, table) {
				return Result{Rows: []map[string]bigquery.Value{row}}, nil
			}
		}
		return Result{Rows: []map[string]bigquery.Value{{}}}, nil
	case "first":
		return Result{Rows: []map[string]bigquery.Value{{"first_position": f.first}}}, nil
	case "late":
		return Result{Rows: []map[string]bigquery.Value{{}}}, nil // no archive
	case "gold_touched":
		var rows []map[string]bigquery.Value
		for _, v := range f.touched {
			rows = append(rows, map[string]bigquery.Value{"__cluster": v})
		}
		return Result{Rows: rows}, nil
	case "ledger":
		var rows []map[string]bigquery.Value
		for src, until := range f.ledger {
			rows = append(rows, map[string]bigquery.Value{"source": src, "until": until})
		}
		return Result{Rows: rows}, nil
	case "marker":
		for table, row := range f.marker {
			if strings.Contains(sql, table) {
				return Result{Rows: []map[string]bigquery.Value{row}}, nil
			}
		}
		return Result{}, nil
	}
	if k := kindOf(st.Step); k == "fold" || k == "maintain" {
		// The state now holds rows (the metadata says so).
		if i := strings.Index(sql, "INSERT INTO `p`.`cdc`.`"); i >= 0 {
			name := sql[i+len("INSERT INTO `p`.`cdc`.`"):]
			name = name[:strings.Index(name, "`")]
			if md, ok := f.tables["cdc."+name]; ok {
				md.NumRows++
			}
		}
	}
	return Result{RowsAffected: 1}, nil
}

// kindOf names a statement by its step (the seam's name for it: the fake
// never reads the SQL's prose), as the tests compare runs.
func kindOf(step string) string {
	switch step {
	case StepFirst:
		return "first"
	case StepLate, StepArchiveSlots:
		return "late"
	case StepMaintainGC:
		return "maintain_gc"
	case StepExpire:
		return "expire"
	case StepAppends:
		return "ledger"
	case StepGoldTouched:
		return "gold_touched"
	case StepGoldGC:
		return "gold_maintain"
	case StepStats, StepMarker, StepMaintain, StepChanges, StepFold, StepGold:
		return step
	}
	return "other"
}

func (f *fakeBQ) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, step := range f.steps {
		out = append(out, kindOf(step))
	}
	return out
}

func (f *fakeBQ) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries, f.steps, f.views, f.states, f.reads, f.lists = nil, nil, nil, nil, nil, nil
}

// ListTables lists a dataset of the fake (the compactor's Lister).
func (f *fakeBQ) ListTables(_ context.Context, dataset string) ([]clients.ListedTable, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, dataset)
	var out []clients.ListedTable
	for key, md := range f.tables {
		ds, name, _ := strings.Cut(key, ".")
		if ds != dataset {
			continue
		}
		out = append(out, clients.ListedTable{Name: name, Labels: maps.Clone(md.Labels), Created: f.created[key]})
	}
	return out, nil
}

func (f *fakeBQ) Metadata(_ context.Context, dataset, table string) (*bigquery.TableMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, dataset+"."+table)
	md, ok := f.tables[dataset+"."+table]
	if !ok {
		return nil, nil
	}
	cp := *md
	cp.Labels = map[string]string{}
	for k, v := range md.Labels {
		cp.Labels[k] = v
	}
	return &cp, nil
}

func (f *fakeBQ) SetLabels(_ context.Context, dataset, table string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	md, ok := f.tables[dataset+"."+table]
	if !ok {
		return &googleapi.Error{Code: 404, Message: "not found"}
	}
	if md.Labels == nil {
		md.Labels = map[string]string{}
	}
	for k, v := range labels {
		md.Labels[k] = v
	}
	return nil
}

func (f *fakeBQ) State(_ context.Context, b *flow.Bound) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states = append(f.states, b.Name)
	key := "cdc." + catalog.StateName(b.Flow)
	md, ok := f.tables[key]
	if !ok {
		md = &bigquery.TableMetadata{Labels: map[string]string{}}
		f.tables[key] = md
	}
	md.Schema = bigquery.Schema{}
	for _, c := range plan.For(b, catalog.Location{}).StateColumns() {
		md.Schema = append(md.Schema, &bigquery.FieldSchema{Name: c.Name, Type: bigquery.FieldType(c.Type)})
	}
	md.Labels[catalog.StateLayoutLabel] = catalog.StateLayout
	return nil
}

func (f *fakeBQ) View(_ context.Context, b *flow.Bound, hint time.Time) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views = append(f.views, b.Name+"@"+hint.UTC().Format(time.RFC3339))
	return 0, nil
}

func (f *fakeBQ) SnapshotView(_ context.Context, b *flow.Bound, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.views = append(f.views, b.Name+"@version:"+key)
	return nil
}

// labels of a table.
func (f *fakeBQ) labels(table string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if md, ok := f.tables[table]; ok {
		return md.Labels
	}
	return nil
}

var testLoc = catalog.Location{Project: "p", DefaultDataset: "cdc"}

// testFlows binds n SCD 1 flows f0..f(n-1) over sources src0..src(n-1), and
// their changelogs' metadata in fake.
func testFlows(t *testing.T, fake *fakeBQ, n int, scd int) []*flow.Bound {
	t.Helper()
	var src strings.Builder
	for i := range n {
		fmt.Fprintf(&src, "CREATE FLOW f%d AS AUTO CDC INTO t%d FROM STREAM(src%d) KEYS (id) APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq STORED AS SCD TYPE %d;\n", i, i, i, scd)
	}
	flows, err := flow.Parse("flows.sql", src.String())
	if err != nil {
		t.Fatal(err)
	}
	cols := append(schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "seq", Type: schema.Int64},
		{Name: "op", Type: schema.String}, {Name: "v", Type: schema.String}}, catalog.MetadataColumns()...)
	var out []*flow.Bound
	for i, f := range flows {
		b, err := flow.Bind(f, cols)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		fake.tables["cdc."+catalog.TableName(fmt.Sprintf("src%d", i))] = &bigquery.TableMetadata{NumRows: 10, Labels: map[string]string{},
			Schema: bqschema.ToBigQuery(cols)}
	}
	return out
}

var errTransient = &googleapi.Error{Code: 503, Message: "backend error"}
var errPermanent = &googleapi.Error{Code: 400, Message: "invalid query"}
