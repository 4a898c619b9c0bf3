-- SCD 2 with TRACK HISTORY, into a dataset of its own: the change table,
-- the state, the view, <target>_at and <target>_changes.
CREATE FLOW customers_history AS AUTO CDC INTO history.customers
FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id)
WHERE _cdc_op IS DISTINCT FROM 't'
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_schema_id, _cdc_publish_time, _cdc_transaction, _cdc_ingested_at)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (balance);
