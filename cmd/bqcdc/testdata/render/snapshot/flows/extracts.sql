-- Snapshot flows over a table of full extracts (its columns from
-- schemas/staging.customer_extracts.schema.json): SCD 1, and SCD 2 with
-- TRACK HISTORY and a WHERE. The state and the view each; no table
-- functions.
CREATE FLOW customers_snapshot AS AUTO CDC FROM SNAPSHOT INTO customers_from_extracts
FROM staging.customer_extracts
KEYS (id)
VERSION BY extracted_at
STORED AS SCD TYPE 1;

APPLY CHANGES FROM SNAPSHOT INTO analytics.customers_extract_history
FROM staging.customer_extracts
KEYS (id)
VERSION BY extracted_at
WHERE city IS DISTINCT FROM 'Test'
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (tags);
