-- Bitemporal with IGNORE NULL UPDATES: the state, the view and
-- <target>_as_of (no change feed: the target is time travel already).
CREATE FLOW customers_bitemporal AS AUTO CDC INTO customers_bitemporal
FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id)
WHERE _cdc_op IS DISTINCT FROM 't'
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (id, first_name, last_name, email, _cdc_sequence, _cdc_ingested_at)
IGNORE NULL UPDATES ON (email)
STORED AS BITEMPORAL;
