package limits

// MaxTableIDBytes is BigQuery's limit on a table id (a table, view or
// materialized view name): "up to 1,024 UTF-8 bytes"
// (https://cloud.google.com/bigquery/docs/tables#table_naming).
const MaxTableIDBytes = 1024

// MaxRoutineIDChars is BigQuery's limit on a routine id (a table function's
// name): "a maximum length of 256 characters"
// (https://cloud.google.com/bigquery/docs/routines#naming).
const MaxRoutineIDChars = 256
