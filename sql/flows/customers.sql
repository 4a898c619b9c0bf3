-- Customers of the demo MySQL database (Debezium topic dbserver1.inventory.customers).

-- Current state: one row per customer that exists now.
CREATE FLOW customers_current AS AUTO CDC INTO customers
FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
APPLY AS TRUNCATE WHEN _cdc_op = 't'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_schema_id, _cdc_publish_time, _cdc_transaction)
STORED AS SCD TYPE 1;

-- Full history: one row per version, with __START_AT / __END_AT. A change
-- to the balance alone updates the current version in place. SCD type 2 has
-- no truncate (as in Databricks): Debezium's keyless truncate markers are
-- filtered out rather than shown as a row with NULL keys.
CREATE FLOW customers_history AS AUTO CDC INTO customers_history
FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id)
WHERE _cdc_op IS DISTINCT FROM 't'
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
COLUMNS * EXCEPT (_cdc_message_id, _cdc_schema_id, _cdc_publish_time, _cdc_transaction, _cdc_ingested_at)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (balance);

-- Bitemporal history: the history by source position (business time), as
-- bqcdc knew it at each ingestion time (system time): a late event corrects
-- history without erasing what was believed before it arrived. Query it as
-- of both times with customers_bitemporal_as_of(business_time, system_time).
CREATE FLOW customers_bitemporal AS AUTO CDC INTO customers_bitemporal
FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id)
WHERE _cdc_op IS DISTINCT FROM 't'
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (id, first_name, last_name, email, _cdc_sequence, _cdc_ingested_at)
STORED AS BITEMPORAL;
