-- One flow that renders, and one refusal of each kind a render finds
-- offline: a reserved name, a name another flow's object takes (both
-- claimants are refused), a condition that is not BOOL, a source whose
-- schema is not JSON.
CREATE FLOW orders_current AS AUTO CDC INTO orders FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number) APPLY AS DELETE WHEN _cdc_op = 'd' SEQUENCE BY _cdc_sequence;

CREATE FLOW sneaky AS AUTO CDC INTO orders__state FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number) SEQUENCE BY _cdc_sequence;

CREATE FLOW victim AS AUTO CDC INTO victim FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number) SEQUENCE BY _cdc_sequence;

CREATE FLOW clash AS AUTO CDC INTO victim_at FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number) SEQUENCE BY _cdc_sequence;

CREATE FLOW untyped AS AUTO CDC INTO untyped FROM STREAM(`dbserver1.inventory.orders`)
KEYS (order_number) APPLY AS DELETE WHEN quantity SEQUENCE BY _cdc_sequence;

CREATE FLOW customers_current AS AUTO CDC INTO customers FROM STREAM(`dbserver1.inventory.customers`)
KEYS (id) SEQUENCE BY _cdc_sequence;
