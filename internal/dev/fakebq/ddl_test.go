package fakebq

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqerror"
)

// DDL jobs make, replace and drop what they name, and fail, as BigQuery's
// do, when what they read is missing; views made through tables.insert
// are checked the same way.
func TestDDLObjects(t *testing.T) {
	ctx := context.Background()
	srv := Start(t, Options{})
	bq, _ := srv.ClientsVia(t, http.DefaultTransport)
	if err := bq.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	run := func(sql string) error {
		job, err := bq.Query(sql).Run(ctx)
		if err != nil {
			return err
		}
		st, err := job.Wait(ctx)
		if err != nil {
			return err
		}
		return st.Err()
	}
	exists := func(name string) bool {
		_, err := bq.Dataset("d").Table(name).Metadata(ctx)
		if err != nil && !bqerror.NotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	p := "`" + DefaultProject + "`.`d`."
	steps := []struct {
		sql      string
		notFound bool // wanted: 404
		conflict bool // wanted: 409
	}{
		{sql: "CREATE OR REPLACE TABLE " + p + "`n` AS SELECT 1 AS x"},
		{sql: "CREATE TABLE " + p + "`n` AS SELECT 1 AS x", conflict: true},
		{sql: "CREATE TABLE IF NOT EXISTS " + p + "`n` AS SELECT 1 AS x"},
		{sql: "INSERT INTO " + p + "`n` (x) SELECT 2"},
		{sql: "INSERT INTO " + p + "`missing` (x) SELECT 2", notFound: true},
		{sql: "CREATE OR REPLACE TABLE " + p + "`m` AS SELECT * FROM " + p + "`missing`", notFound: true},
		// Names in strings and comments are not references.
		{sql: "CREATE OR REPLACE TABLE " + p + "`m` AS\n-- " + p + "`missing`\nSELECT '" + p + "`missing`' AS s FROM " + p + "`n`"},
		{sql: "CREATE OR REPLACE TABLE FUNCTION " + p + "`f`(a INT64) AS (SELECT * FROM " + p + "`n`);\n\n" +
			"CREATE OR REPLACE VIEW " + p + "`v` AS SELECT * FROM " + p + "`f`(1)"},
		{sql: "DROP TABLE " + p + "`m`"},
		{sql: "DROP TABLE " + p + "`m`", notFound: true},
		{sql: "DROP TABLE IF EXISTS " + p + "`m`"},
	}
	for _, s := range steps {
		err := run(s.sql)
		switch {
		case s.notFound && !bqerror.NotFound(err):
			t.Errorf("%s: %v, want 404", s.sql, err)
		case s.conflict && (err == nil || !strings.Contains(err.Error(), "Already Exists")):
			t.Errorf("%s: %v, want 409", s.sql, err)
		case !s.notFound && !s.conflict && err != nil:
			t.Errorf("%s: %v", s.sql, err)
		}
	}
	for name, want := range map[string]bool{"n": true, "v": true, "m": false, "missing": false} {
		if got := exists(name); got != want {
			t.Errorf("table %s exists: %v, want %v", name, got, want)
		}
	}
	// A table CREATE TABLE ... AS made can be labelled (apply labels
	// _bqcdc_flows so), and CREATE OR REPLACE drops the labels.
	var upd bigquery.TableMetadataToUpdate
	upd.SetLabel("k", "v")
	if _, err := bq.Dataset("d").Table("n").Update(ctx, upd, ""); err != nil {
		t.Fatalf("labelling a table DDL made: %v", err)
	}
	if err := run("CREATE OR REPLACE TABLE " + p + "`n` AS SELECT 1 AS x"); err != nil {
		t.Fatal(err)
	}
	if md, err := bq.Dataset("d").Table("n").Metadata(ctx); err != nil || len(md.Labels) != 0 {
		t.Errorf("replaced table: labels %v (%v), want none", md.Labels, err)
	}
	// tables.insert of a view checks its references too.
	err := bq.Dataset("d").Table("w").Create(ctx, &bigquery.TableMetadata{ViewQuery: "SELECT * FROM " + p + "`missing`"})
	if !bqerror.NotFound(err) {
		t.Errorf("a view of a missing table: %v, want 404", err)
	}
	if err := bq.Dataset("d").Table("w").Create(ctx, &bigquery.TableMetadata{ViewQuery: "SELECT * FROM " + p + "`f`(2)"}); err != nil {
		t.Errorf("a view of a table function: %v", err)
	}
}

func TestReferences(t *testing.T) {
	sql := "SELECT * FROM `p`.`d`.`t` JOIN `p.d.u` USING (k) -- `p`.`d`.`c`\n" +
		"WHERE s = 'it''s `p`.`d`.`s`' OR r = \"`p`.`d`.`r`\" /* `p`.`d`.`b` */ AND x IN (SELECT k FROM `d`.`two`) AND y = `p`.`d`.`t`.k"
	got := strings.Join(references(sql), " ")
	want := "projects/p/datasets/d/tables/t projects/p/datasets/d/tables/u"
	if got != want {
		t.Errorf("references:\n got %s\nwant %s", got, want)
	}
}
