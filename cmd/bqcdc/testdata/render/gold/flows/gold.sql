-- Materialized views over SCD 1 targets: a windowed aggregate (its state,
-- refresh, maintenance, <name>_changes and <name>_refreshed) and a grouped
-- one, with the flows they read.
CREATE FLOW customers_current AS AUTO CDC INTO customers
FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
STORED AS SCD TYPE 1;

APPLY CHANGES INTO orders
FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number)
APPLY AS DELETE WHEN _cdc_op = 'd'
SEQUENCE BY _cdc_sequence
STORED AS SCD TYPE 1;

CREATE MATERIALIZED VIEW orders_per_day COMMENT 'orders, units and customers per order day' AS
SELECT window(order_date, '1 day') AS day, COUNT(*) AS orders, SUM(quantity) AS units, COUNT(DISTINCT purchaser) AS customers
FROM orders
GROUP BY window(order_date, '1 day');

CREATE MATERIALIZED VIEW gold.customers_per_tier COMMENT 'customers and balances per tier' AS
SELECT tier, COUNT(*) AS customers, SUM(balance) AS balance, AVG(balance) AS mean_balance
FROM customers
GROUP BY tier;
