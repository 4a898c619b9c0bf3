-- Gold flows: aggregates over the current state of a flow's target, exact
-- whenever they are read; compaction also keeps <name>_refreshed, as of the
-- change feed, read from a small table (docs/gold-flows.md).

-- Orders, units and distinct customers per order day.
CREATE MATERIALIZED VIEW orders_per_day COMMENT 'orders, units and customers per order day' AS
SELECT window(order_date, '1 day') AS day, COUNT(*) AS orders, SUM(quantity) AS units, COUNT(DISTINCT purchaser) AS customers
FROM orders
GROUP BY window(order_date, '1 day');

-- Customers per tier: a tier change moves a customer between groups, a
-- delete leaves them.
CREATE MATERIALIZED VIEW customers_per_tier COMMENT 'customers and balances per tier' AS
SELECT tier, COUNT(*) AS customers, SUM(balance) AS balance, AVG(balance) AS mean_balance
FROM customers
GROUP BY tier;
