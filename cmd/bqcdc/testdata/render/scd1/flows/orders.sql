-- SCD 1 with deletes and truncates: the change table, the state, the
-- view, <target>_at and <target>_changes.
APPLY CHANGES INTO orders
FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number)
APPLY AS DELETE WHEN _cdc_op = 'd'
APPLY AS TRUNCATE WHEN _cdc_op = 't'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_schema_id, _cdc_publish_time, _cdc_transaction, _cdc_ingested_at)
STORED AS SCD TYPE 1;
