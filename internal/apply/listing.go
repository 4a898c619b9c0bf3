package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/clients"
)

// Lister lists a dataset's tables with their labels (clients.TableLister:
// tables.list, a request per page of 1,000).
type Lister interface {
	ListTables(ctx context.Context, dataset string) ([]clients.ListedTable, error)
}

// Listing is what a listing said of some datasets, by dataset and table
// name. A nil Listing knows nothing: every object is read (tables.get), as
// without a Lister.
type Listing map[string]map[string]clients.ListedTable

// listing is Listing, as apply's steps pass it.
type listing = Listing

// List lists datasets with l (nil when l is nil): apply's listing, and
// compaction's.
func List(ctx context.Context, l Lister, datasets []string) (Listing, error) {
	if l == nil {
		return nil, nil
	}
	out := Listing{}
	for _, ds := range datasets {
		tables, err := l.ListTables(ctx, ds)
		if err != nil {
			return nil, err
		}
		byName := make(map[string]clients.ListedTable, len(tables))
		for _, t := range tables {
			byName[t.Name] = t
		}
		out[ds] = byName
	}
	return out, nil
}

// lookup says whether the listing covers dataset (known) and, if so,
// whether it holds table (exists) and what it said of it.
func (l Listing) lookup(dataset, table string) (t clients.ListedTable, known, exists bool) {
	tables, known := l[dataset]
	if !known {
		return clients.ListedTable{}, false, false
	}
	t, exists = tables[table]
	return t, true, exists
}

// specHash is the value of catalog.SpecLabel for parts: a label value
// (lower-case hex, 32 characters).
func specHash(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// tableSpec is the spec label of a wanted table: everything apply sets on
// it (labels but the spec itself).
func tableSpec(want *bigquery.TableMetadata) string {
	labels := maps.Clone(want.Labels)
	delete(labels, catalog.SpecLabel)
	b, err := json.Marshal(struct {
		Description      string
		Schema           bigquery.Schema
		TimePartitioning *bigquery.TimePartitioning
		Clustering       *bigquery.Clustering
		Labels           map[string]string
		// omitted when nil: the spec of a table without it is as before
		RangePartitioning *bigquery.RangePartitioning `json:",omitempty"`
	}{want.Description, want.Schema, want.TimePartitioning, want.Clustering, labels, want.RangePartitioning})
	if err != nil {
		// A schema always marshals; were it not to, no listing could
		// vouch for the table, and it is read as without one.
		return ""
	}
	return specHash(b)
}

// wantedView is what apply wants of a flow's view.
type wantedView struct {
	sql, desc    string
	label, value string            // the bound it is rendered with, as a label
	columns      map[string]string // column descriptions, by lower-case name
	owner        string            // catalog.FlowLabel's value: the flow that makes the view
	spec         string
}

func newWantedView(flowName, sql, desc, label, value string, columns map[string]string) wantedView {
	w := wantedView{sql: sql, desc: desc, label: label, value: value, columns: columns, owner: catalog.FlowLabelValue(flowName)}
	names := slices.Sorted(maps.Keys(columns))
	var cols strings.Builder
	for _, n := range names {
		cols.WriteString(n + "\x00" + columns[n] + "\x00")
	}
	w.spec = specHash([]byte(sql), []byte(desc), []byte(label+"="+value), []byte(cols.String()), []byte(catalog.FlowLabel+"="+w.owner))
	return w
}
