-- Orders of the demo MySQL database, in the older APPLY CHANGES spelling.
-- Its state is kept in 64 buckets of the key (docs/cost.md, states of
-- buckets): a compaction run's change feed reads the partitions of the
-- orders it touches, whatever BigQuery's storage blocks; a lookup of one
-- order through the view reads every partition.
CREATE STREAMING TABLE orders TBLPROPERTIES ('bqcdc.state.buckets' = '64');

APPLY CHANGES INTO orders
FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number)
APPLY AS DELETE WHEN _cdc_op = 'd'
APPLY AS TRUNCATE WHEN _cdc_op = 't'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_schema_id, _cdc_publish_time, _cdc_transaction, _cdc_ingested_at)
STORED AS SCD TYPE 1;
