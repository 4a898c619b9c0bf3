package flow

// The clause rules, checked against Databricks. bqcdc accepts every flow
// Databricks accepts that it can run; where it cannot, it refuses the flow
// with a message naming what is unsupported, and the other flows still run.
// Sources:
//
//	[sql]  AUTO CDC INTO (pipelines), SQL reference, and its predecessor
//	       APPLY CHANGES INTO (DLT): docs.databricks.com/aws/en/ldp/developer/ldp-sql-ref-apply-changes-into,
//	       docs.databricks.com/aws/en/dlt-ref/dlt-sql-ref-apply-changes-into
//	[flow] CREATE FLOW (pipelines): docs.databricks.com/aws/en/ldp/developer/ldp-sql-ref-create-flow
//	[dbsql] CREATE STREAMING TABLE ... FLOW AUTO CDC (Databricks SQL, beta):
//	       docs.databricks.com/aws/en/sql/language-manual/sql-ref-syntax-ddl-create-streaming-table-auto-cdc
//	[py]   create_auto_cdc_flow (Python reference): docs.databricks.com/aws/en/dlt-ref/dlt-python-ref-apply-changes
//	[spark] Apache Spark Declarative Pipelines' AutoCDC, the open implementation
//	       (apache/spark sql/pipelines; SPARK-58247, SPARK-58313)
//	[snap] AUTO CDC FROM SNAPSHOT (Python reference, create_auto_cdc_from_snapshot_flow):
//	       docs.databricks.com/aws/en/ldp/developer/ldp-python-ref-apply-changes-from-snapshot,
//	       and the examples of docs.databricks.com/aws/en/ldp/cdc
//	[suite] a published AUTO CDC test suite run on Databricks: except_column_list
//	       ["operation", "last_synced_at"] with track_history_except_column_list
//	       ["last_synced_at"] on SCD type 2 targets
//
// Statements (parser.go):
//   - CREATE FLOW name [COMMENT 'text'] AS AUTO CDC INTO target, or AS APPLY
//     CHANGES INTO [flow]; APPLY CHANGES INTO target [sql]; AUTO CDC INTO
//     target alone is accepted too. Accepted.
//   - CREATE [OR REFRESH] STREAMING TABLE target ... FLOW AUTO CDC FROM ...
//     [dbsql]: accepted; the flow is named after its table.
//   - CREATE [OR REFRESH] [PRIVATE|TEMPORARY] STREAMING [LIVE] TABLE target
//     [schema, COMMENT, TBLPROPERTIES, ...]; the target declaration every
//     example precedes a flow with [sql][flow]: accepted and ignored (bqcdc
//     creates the view). CREATE FLOW's COMMENT is kept in Flow.Comment.
//   - Refused: append flows (CREATE FLOW ... AS INSERT INTO [flow]), streaming
//     tables and views defined by a query, and COLUMNS TO UPDATE [dbsql]:
//     bqcdc maintains AUTO CDC views and applies whole change events.
//   - STORED AS { SCD TYPE 1 | SCD TYPE 2 | BITEMPORAL } and SYSTEM SEQUENCE BY
//     systemOrderByColumn [sql][dbsql] (bitemporal: Beta). The stored copies
//     of the references list the clauses but not how they combine, so these
//     are bqcdc's rules: BITEMPORAL needs SYSTEM SEQUENCE BY, and SYSTEM
//     SEQUENCE BY needs BITEMPORAL (only a bitemporal target has a system
//     time); BITEMPORAL is SCD 2 history in business time, so APPLY AS
//     TRUNCATE WHEN is refused as for SCD 2, TRACK HISTORY and IGNORE NULL
//     UPDATES apply as for SCD 2; SEQUENCE BY and SYSTEM SEQUENCE BY are one
//     orderable column each (not STRUCT): each axis is one sortable value,
//     which <target>_as_of takes as an argument. Rows whose system sequence
//     is NULL are excluded, as rows with a NULL sequence are. The measured
//     scenario of the acceptance data (a published test suite run on
//     Databricks) is a golden test.
//   - FROM STREAM(source), FROM STREAM source, or FROM source [sql] (a stream
//     or a streaming view); the source is a Pub/Sub topic, a LIVE. prefix is
//     dropped. A target is [LIVE.][dataset.]table; a three-part
//     catalog.schema.table is refused: the project comes from the deployment.
//   - Clauses in any order, each at most once [sql] lists each once.
//   - Conditions are expressions over one change row; Spark's == and <=>
//     become BigQuery's = and IS NOT DISTINCT FROM.
//
// Clauses (checkStructure, Bind):
//   - KEYS is required [sql]; the keys must be among the output columns
//     ([spark] requireKeysPresentInSelectedSchema) and of a type BigQuery can
//     group exactly. Databricks takes any key type; bqcdc refuses ARRAY,
//     JSON and GEOGRAPHY keys (BigQuery cannot group them) and FLOAT64 ones
//     (NaN and -0 make poor identities, and bqcdc clusters the changelog and
//     state tables by the keys, which BigQuery does not allow for FLOAT64).
//   - SEQUENCE BY is required [sql]: one column, or STRUCT(a, b, ...) to break
//     ties field by field [sql][py]; columns BigQuery cannot order are refused.
//     The sequence columns may be excluded from the output (the [sql] example
//     does COLUMNS * EXCEPT (operation, sequenceNum)).
//   - COLUMNS (list) or COLUMNS * EXCEPT (list) [sql]; every name must be a
//     changelog column ([spark] AUTOCDC_COLUMNS_NOT_FOUND_IN_SCHEMA).
//   - APPLY AS TRUNCATE WHEN only with SCD TYPE 1 [sql]: "SCD type 2 does not
//     support the truncate operation".
//   - STORED AS SCD TYPE 1 (the default) or 2 [sql].
//   - TRACK HISTORY ON only with SCD TYPE 2 ([spark] rejects track-history
//     columns unless SCD2 is selected); its default is every output column
//     [sql], which bqcdc reads as every output column but the keys, the
//     sequence columns and _cdc_* (those change with every event).
//     TRACK HISTORY ON (list) names output columns that are not keys
//     ([spark] SPARK-58313). TRACK HISTORY ON * EXCEPT (list) may name any
//     changelog column, including ones COLUMNS drops [suite] and keys, and
//     may leave nothing tracked.
//   - IGNORE NULL UPDATES, or IGNORE NULL UPDATES ON (list) | ON * EXCEPT
//     (list) [dbsql][py]: as TRACK HISTORY ON, and an explicit list may not
//     name an ARRAY (BigQuery stores NULL arrays as empty ones, so a NULL
//     cannot be told apart); * EXCEPT may.
//   - WHERE condition [sql, the DLT version]: only matching events apply.
//   - Flow names and targets are unique. Databricks can merge several AUTO
//     CDC flows into one streaming table; bqcdc keeps one flow per target and
//     refuses the second.
//
// Snapshot flows (checkSnapshot, Bind):
//   - AUTO CDC FROM SNAPSHOT [snap] (Databricks: the Python
//     create_auto_cdc_from_snapshot_flow / apply_changes_from_snapshot, whose
//     parameters are target, source, keys, stored_as_scd_type and
//     track_history_column_list / track_history_except_column_list; the
//     SQL spelling is bqcdc's, beside AUTO CDC INTO): CREATE FLOW name AS
//     AUTO CDC FROM SNAPSHOT INTO target FROM dataset.table, APPLY CHANGES
//     FROM SNAPSHOT INTO target FROM ..., and CREATE STREAMING TABLE target
//     FLOW AUTO CDC FROM SNAPSHOT dataset.table. The source is a BigQuery
//     table in the deployment's project, named dataset.table (a one- or
//     three-part name is refused).
//   - VERSION BY column is required: the table holds snapshots appended
//     with a version, which orders them ([snap] versions a source function
//     returns). The no-VERSION-BY form (a table overwritten by each load,
//     versioned by ingestion time in [snap]) is not built yet and refused.
//     The column is INT64, STRING, DATE, DATETIME or TIMESTAMP, and is not a
//     target column (SCD 2 shows versions as __START_AT/__END_AT).
//   - KEYS, COLUMNS, STORED AS SCD TYPE 1 | 2 and TRACK HISTORY ON as for
//     change streams [snap]. WHERE (bqcdc's): only matching rows belong to
//     a snapshot, so a row that stops matching is deleted.
//   - Refused, with the reason: SEQUENCE BY (a snapshot flow is ordered by
//     VERSION BY), APPLY AS DELETE WHEN and APPLY AS TRUNCATE WHEN (a delete
//     is a key missing from the next snapshot), IGNORE NULL UPDATES (a
//     snapshot holds whole rows, so a NULL is a value), STORED AS BITEMPORAL
//     and SYSTEM SEQUENCE BY (a snapshot has one time, its version), and
//     VERSION BY on a change-stream flow.
//
// Not verified against Databricks, kept as bqcdc's own rules: a column listed
// twice in one list is refused, and an EXCEPT name that is not a changelog
// column is refused (most likely a typo).

// checkSnapshot enforces the rules of AUTO CDC FROM SNAPSHOT (above).
func checkSnapshot(f *Flow) *Error {
	refuse := func(clause, why string) *Error {
		return errorf(f.clauses[clause], "%s is not supported with AUTO CDC FROM SNAPSHOT: %s", clause, why)
	}
	switch {
	case f.Version == nil:
		return errorf(f.Snapshot.Pos, "AUTO CDC FROM SNAPSHOT needs VERSION BY column: bqcdc reads snapshots appended to %s with a version column "+
			"(a table overwritten by each load, versioned by ingestion time, is not supported yet): load each extract with its version and add VERSION BY", f.Snapshot)
	case f.Sequence != nil:
		return refuse("SEQUENCE BY", "snapshots are ordered by their VERSION BY column")
	case f.DeleteWhen != nil:
		return refuse("APPLY AS DELETE WHEN", "a key missing from a snapshot is deleted at that snapshot's version")
	case f.TruncateWhen != nil:
		return refuse("APPLY AS TRUNCATE WHEN", "an empty snapshot deletes every key")
	case f.IgnoreNull != nil:
		return refuse("IGNORE NULL UPDATES", "a snapshot holds whole rows, so a NULL is a value")
	case f.SystemSequence != nil:
		return refuse("SYSTEM SEQUENCE BY", "a snapshot has one time, its version")
	case f.Bitemporal:
		return errorf(f.clauses["STORED AS"], "STORED AS BITEMPORAL is not supported with AUTO CDC FROM SNAPSHOT: a snapshot has one time, its version; use STORED AS SCD TYPE 2")
	case f.SCDType == 1 && f.TrackHistory != nil:
		return errorf(f.clauses["TRACK HISTORY"], "TRACK HISTORY ON needs STORED AS SCD TYPE 2: SCD type 1 keeps no history to track (Databricks refuses it too)")
	}
	return nil
}
