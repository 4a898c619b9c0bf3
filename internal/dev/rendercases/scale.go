package rendercases

import (
	"fmt"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/schema"
)

// ScaleFlowFile is the flow file of source i of a many-table deployment
// (sql/render's and apply's scale tests and benchmarks), as a team that
// keeps a table's flows together would write it: an SCD 1 current state
// (with truncates) and an SCD 2 history with a composite key, a STRUCT
// sequence, tracked and NULL-ignored columns and a filter. topic is the
// source; its row image has the columns id, tenant_id, name, email, status,
// amount, balance, created_at, updated_at, birth_date, is_active and tags.
func ScaleFlowFile(i int, topic string) string {
	return fmt.Sprintf(`-- Flows of source %[2]s.

CREATE FLOW t%03[1]d_current AS AUTO CDC INTO t%03[1]d_current
FROM STREAM(`+"`%[2]s`"+`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
APPLY AS TRUNCATE WHEN _cdc_op = 't'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_transaction)
STORED AS SCD TYPE 1;

CREATE FLOW t%03[1]d_history AS AUTO CDC INTO history.t%03[1]d
FROM STREAM(`+"`%[2]s`"+`)
KEYS (tenant_id, id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY STRUCT(updated_at, _cdc_sequence)
COLUMNS * EXCEPT (_cdc_transaction)
WHERE status IS NULL OR status != 'test'
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (updated_at, balance)
IGNORE NULL UPDATES ON (email, status);
`, i, topic)
}

// ScaleChangelog is the changelog of each source of ScaleFlowFile, a
// realistic one: a 12-column row image (keys, text, money, times, a flag,
// an array) plus bqcdc's 8 metadata columns, 20 columns in all.
func ScaleChangelog() schema.Columns {
	image := schema.Columns{
		{Name: "id", Type: schema.Int64, Required: true},
		{Name: "tenant_id", Type: schema.String, Required: true},
		{Name: "name", Type: schema.String},
		{Name: "email", Type: schema.String},
		{Name: "status", Type: schema.String},
		{Name: "amount", Type: schema.Numeric},
		{Name: "balance", Type: schema.Float64},
		{Name: "created_at", Type: schema.Timestamp},
		{Name: "updated_at", Type: schema.Timestamp},
		{Name: "birth_date", Type: schema.Date},
		{Name: "is_active", Type: schema.Bool},
		{Name: "tags", Type: schema.String, Repeated: true},
	}
	return append(image, catalog.MetadataColumns()...)
}
