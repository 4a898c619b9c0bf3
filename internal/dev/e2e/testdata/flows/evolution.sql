-- Schema evolution: a MySQL Debezium source whose schema changes while
-- messages written with the old schema are still in flight.
CREATE FLOW evo_current AS AUTO CDC INTO evo_customers
FROM STREAM(`test.evo.customers`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
STORED AS SCD TYPE 1;

CREATE FLOW evo_history AS AUTO CDC INTO evo_customers_history
FROM STREAM(`test.evo.customers`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
STORED AS SCD TYPE 2;
