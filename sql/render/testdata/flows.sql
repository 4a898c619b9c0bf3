-- Flows whose rendered SQL is kept in golden/: one per template branch.

CREATE FLOW users_scd1 AS AUTO CDC INTO users_current
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum);

CREATE FLOW users_scd1_truncate AS AUTO CDC INTO analytics.users_partial
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum
COLUMNS (userId, name, city, tags)
IGNORE NULL UPDATES ON (name, city)
WHERE city IS NULL OR city != 'Test City'
STORED AS SCD TYPE 1;

-- A state of buckets (partitioned by a hash bucket of the key), declared
-- in Databricks SQL's form; its truncates are in the NULL partition.
CREATE OR REFRESH STREAMING TABLE users_bucketed
TBLPROPERTIES ('bqcdc.state.buckets' = '3999')
FLOW AUTO CDC FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
APPLY AS TRUNCATE WHEN operation = 'TRUNCATE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 1;

-- An SCD 1 target whose state keeps a history of its events for its
-- <target>_at (render/history.go).
CREATE OR REFRESH STREAMING TABLE users_current_history
TBLPROPERTIES ('bqcdc.history' = 'true')
FLOW AUTO CDC FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum);

-- An SCD 2 history in a state of buckets: archived into a second range
-- of partitions (render/archive.go).
CREATE OR REFRESH STREAMING TABLE users_history_bucketed
TBLPROPERTIES ('bqcdc.state.buckets' = '4000')
FLOW AUTO CDC FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation)
STORED AS SCD TYPE 2
TRACK HISTORY ON (name);

-- An SCD 2 history with a lateness horizon: maintenance drops the events
-- older than 30 days that open no version (flow.LatenessHorizonProperty).
CREATE OR REFRESH STREAMING TABLE users_history_horizon
TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '30')
FLOW AUTO CDC FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation)
STORED AS SCD TYPE 2
TRACK HISTORY ON (name);

CREATE FLOW users_scd2 AS AUTO CDC INTO users_history
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2;

APPLY CHANGES INTO users_tracked
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY STRUCT(sequenceNum, _cdc_sequence)
COLUMNS * EXCEPT (operation)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (city)
IGNORE NULL UPDATES;

-- Reserved words as column names, composite key.
CREATE FLOW odd_names AS AUTO CDC INTO `odd`
FROM STREAM(`odd.names`)
KEYS (`order`, `group`)
APPLY AS DELETE WHEN `select` = 'x' AND `from` < DATE '2020-01-01'
SEQUENCE BY `by`
STORED AS SCD TYPE 2
TRACK HISTORY ON (`select`, `from`, `where`);

-- Bitemporal: business time by sequenceNum, system time by ingestion.
CREATE FLOW users_bitemporal AS AUTO CDC INTO users_bitemporal
FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS * EXCEPT (operation, _cdc_op, _cdc_source_ts, _cdc_sequence, _cdc_publish_time, _cdc_schema_id, _cdc_transaction)
STORED AS BITEMPORAL;

-- Bitemporal with a lateness horizon: maintenance drops the events older
-- than 7 days that change no row of the view (flow.LatenessHorizonProperty).
CREATE OR REFRESH STREAMING TABLE users_bitemporal_horizon
TBLPROPERTIES ('bqcdc.lateness_horizon_days' = '7')
FLOW AUTO CDC FROM STREAM(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = 'DELETE'
SEQUENCE BY sequenceNum
SYSTEM SEQUENCE BY _cdc_ingested_at
COLUMNS (userId, name, city)
STORED AS BITEMPORAL
TRACK HISTORY ON (name);

-- Snapshots: a table of full extracts versioned by a TIMESTAMP, SCD 1 and
-- SCD 2 with TRACK HISTORY and a WHERE.
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

-- Reserved words, a composite key, a table name with a space, DATE versions.
CREATE FLOW odd_snapshot AS AUTO CDC FROM SNAPSHOT INTO `odd_history`
FROM `staging.odd extracts`
KEYS (`order`, `group`)
VERSION BY `by`
STORED AS SCD TYPE 2;

-- Materialized views (gold flows): a windowed aggregate over an SCD 1
-- target, and a sliding window over a stream of change events.
CREATE OR REFRESH MATERIALIZED VIEW analytics.users_per_city COMMENT 'users per city and hour of arrival' AS
SELECT city, window(_cdc_ingested_at, '1 hour') AS hour, COUNT(*) AS users, COUNT(DISTINCT name) AS names, MAX(userId) AS newest
FROM users_current
WHERE city IS NOT NULL AND city != 'nowhere'
GROUP BY city, window(_cdc_ingested_at, '1 hour')
HAVING users > 1;

CREATE MATERIALIZED VIEW user_events AS
SELECT operation, window(_cdc_ingested_at, '10 minutes', '5 minutes'), COUNT(*) AS events, COUNTIF(name IS NULL) AS unnamed
FROM STREAM(users)
GROUP BY 1, 2;

CREATE MATERIALIZED VIEW user_sessions AS
SELECT city, session_window(_cdc_ingested_at, '30 minutes') AS visit, COUNT(*) AS users
FROM users_current
GROUP BY city, visit;

-- Refreshable by compaction: every aggregate is kept by retraction.
CREATE MATERIALIZED VIEW users_per_hour AS
SELECT window(_cdc_ingested_at, '1 hour') AS hour, city, COUNT(*) AS users, COUNT(name) AS named,
  SUM(userId) AS ids, AVG(userId) AS mean_id, COUNTIF(name IS NULL) AS unnamed
FROM users_current
WHERE city != 'x'
GROUP BY 1, 2
HAVING users > 0;

-- Final windows (append mode): an hour is final once the newest ingestion
-- time seen is ten minutes past its end.
CREATE MATERIALIZED VIEW users_final_hours AS
SELECT window(_cdc_ingested_at, '1 hour') AS hour, city, COUNT(*) AS users, MAX(userId) AS top_id
FROM users_current WATERMARK _cdc_ingested_at DELAY OF INTERVAL 10 MINUTES
GROUP BY 1, city;
