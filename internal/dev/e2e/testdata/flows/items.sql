-- Integration-test flows: a PostgreSQL Debezium source with every mapped type,
-- and an application change log that is not a Debezium envelope.
CREATE FLOW items_current AS AUTO CDC INTO items
FROM STREAM(`test.shop.items`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
STORED AS SCD TYPE 1;

APPLY CHANGES INTO users
FROM STREAM(`app.users`)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 1;
