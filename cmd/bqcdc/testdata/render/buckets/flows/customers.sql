-- SCD 1 with a state of buckets (partitioned by a hash bucket of the key):
-- the state table's DDL says RANGE_BUCKET, the statistics return the
-- touched buckets.
CREATE OR REFRESH STREAMING TABLE customers_current
TBLPROPERTIES ('bqcdc.state.buckets' = '1000')
FLOW AUTO CDC FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_schema_id, _cdc_publish_time, _cdc_transaction, _cdc_ingested_at);
