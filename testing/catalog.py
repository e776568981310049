"""A small SLayer catalog, written as real YAML files, with every resolution corner case in it.

shop (on the priority list by default)
    orders      -> customers -> regions -> countries   (joins three deep)
                columns id, customer_id, amount, cost, qty, status, created_at, refunds, city_code
                measure aov, aggregation amount_wavg
    customers   id, region_id, name, city, segment
    regions     id, country_id, name
    countries   id, name, iso_code
    refunds     id, order_id, amount            (a model named like the column orders.refunds)
wh
    orders      -> warehouses                   (a model name in both datasources)
                id, amount, order_date, warehouse_id, channel
    warehouses  id, name, city, channel_code
    shop        id, opened_at, orders           (a model named like the datasource shop)
    staging_orders  id, raw_payload             (hidden: true)

Bare leaves worth knowing: ``name`` and ``id`` are on several shop models (ambiguous inside shop);
``city`` is on shop.customers and wh.warehouses (decided by the priority list, ambiguous without);
``order_date`` and ``opened_at`` exist only in wh.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

DATASOURCES = {
    "shop": """\
name: shop
type: postgres
connection_string: '${SHOP_DB_URL}'
description: The web shop's operational database.
""",
    "wh": """\
name: wh
type: duckdb
connection_string: '${WH_DB_URL}'
description: Analytics warehouse, rebuilt nightly.
read_only: true
""",
}

MODELS = {
    ("shop", "orders"): """\
version: 15
name: orders
sql_table: public.orders
data_source: shop
description: One row per customer order.
columns:
- {name: id, sql: id, type: INT, primary_key: true}
- {name: customer_id, sql: customer_id, type: INT, description: FK to customers.id}
- {name: amount, sql: amount, type: DOUBLE, description: Order total in EUR}
- {name: cost, sql: cost, type: DOUBLE}
- {name: qty, sql: qty, type: INT, description: Items in the order}
- {name: status, sql: status, type: TEXT, description: "paid | refunded | pending"}
- {name: created_at, sql: created_at, type: TIMESTAMP, description: "Placement time, UTC"}
- {name: refunds, sql: refund_count, type: INT, description: Number of refunds on the order}
measures:
- {name: aov, formula: sum(amount) / count(*), description: Average order value}
aggregations:
- name: amount_wavg
  formula: sum(amount * qty) / sum(qty)
  params: [weight]
  description: Amount weighted by quantity
joins:
- target_model: customers
  join_pairs: [[customer_id, id]]
  join_type: left
  cardinality: many_to_one
hidden: false
filters: []
meta: {owner: finance}
""",
    ("shop", "customers"): """\
name: customers
sql_table: public.customers
description: People who placed at least one order.
columns:
- {name: id, type: INT, primary_key: true}
- {name: region_id, type: INT}
- {name: name, type: TEXT, description: Full name}
- {name: city, type: TEXT, description: Billing city}
- {name: segment, type: TEXT}
joins:
- {target_model: regions, join_pairs: [[region_id, id]]}
""",
    ("shop", "regions"): """\
name: regions
columns:
- {name: id, type: INT}
- {name: country_id, type: INT}
- {name: name, type: TEXT, description: Sales region}
joins:
- target_model: countries
  join_pairs: [[country_id, id]]
""",
    ("shop", "countries"): """\
name: countries
columns:
- {name: id, type: INT}
- {name: name, type: TEXT}
- {name: iso_code, type: TEXT, description: ISO 3166 alpha-2}
""",
    ("shop", "refunds"): """\
name: refunds
description: Processed refunds.
columns:
- {name: id, type: INT}
- {name: order_id, type: INT}
- {name: amount, type: DOUBLE}
""",
    ("wh", "orders"): """\
name: orders
data_source: wh
description: Orders as loaded into the warehouse.
columns:
- {name: id, type: INT}
- {name: amount, type: DOUBLE, description: Net amount}
- {name: order_date, type: DATE}
- {name: warehouse_id, type: INT}
- {name: channel, type: TEXT}
joins:
- {target_model: warehouses, join_pairs: [[warehouse_id, id]]}
""",
    ("wh", "warehouses"): """\
name: warehouses
columns:
- {name: id, type: INT}
- {name: name, type: TEXT}
- {name: city, type: TEXT, description: Where the warehouse is}
- {name: channel_code, type: TEXT}
""",
    ("wh", "shop"): """\
name: shop
description: Physical shops.
columns:
- {name: id, type: INT}
- {name: opened_at, type: DATE}
- {name: orders, type: INT, description: Orders taken at the till}
""",
    ("wh", "staging_orders"): """\
name: staging_orders
hidden: true
columns:
- {name: id, type: INT}
- {name: raw_payload, type: TEXT}
""",
}


def write_test_catalog(root: Path, priority: Sequence[str] | None = ("shop",)) -> None:
    """Write the catalog into the KB folder ``root``; ``priority=None`` writes no priority.yaml."""
    root = Path(root)
    (root / "datasources").mkdir(parents=True, exist_ok=True)
    for name, text in DATASOURCES.items():
        (root / "datasources" / f"{name}.yaml").write_text(text, encoding="utf-8")
    for (ds, model), text in MODELS.items():
        folder = root / "models" / ds
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{model}.yaml").write_text(text, encoding="utf-8")
    if priority is not None:
        listed = ", ".join(priority)
        (root / "priority.yaml").write_text(f"priority: [{listed}]\n", encoding="utf-8")
