"""The catalog of the SLayer fidelity set: SLayer 1.4.1's own YAML layout, valid for both tools.

    shop (first on the priority list)
        orders      -> customers -> regions -> countries     (joins declared one way only)
                    columns id, customer_id, amount, cost, qty, status, created_at, refunds
                    measure aov, aggregation amount_wavg
        customers   id, region_id, name, city, segment; measure customer_count
        regions     id, country_id, name                     (no join back to customers)
        countries   id, name, iso_code
        refunds     id, order_id, amount -> orders, named join 'original_order'
                    (a model named like the column orders.refunds)
        wh          id, name, capacity                        (a model named like datasource wh)
    wh
        orders      id, amount, order_date, warehouse_id, channel -> warehouses
        warehouses  id, name, city, channel_code
        shop        id, opened_at, orders                     (a model named like datasource shop)
    ops (not on the priority list)
        tickets     id, channel, opened_at

``shop`` and ``wh`` each name a datasource and a model, so every reference headed by either
carries SLayer's datasource-and-model warning. Joins are declared in one direction, and walked in
both (``regions.customers``). ``channel`` and ``opened_at`` are leaves of wh and ops, which no
priority orders.
"""

from __future__ import annotations

from pathlib import Path

DATASOURCES = {
    "shop": "name: shop\ntype: sqlite\ndatabase: shop.db\ndescription: The web shop.\n",
    "wh": "name: wh\ntype: sqlite\ndatabase: wh.db\ndescription: The warehouse.\n",
    "ops": "name: ops\ntype: sqlite\ndatabase: ops.db\ndescription: Support desk.\n",
}

_HEAD = "version: 15\nname: {name}\nsql_table: {name}\ndata_source: {ds}\n"

MODELS = {
    ("shop", "orders"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: customer_id, type: INT}
- {name: amount, type: DOUBLE}
- {name: cost, type: DOUBLE}
- {name: qty, type: INT}
- {name: status, type: TEXT}
- {name: created_at, type: TIMESTAMP}
- {name: refunds, type: INT}
measures:
- {name: aov, formula: sum(amount) / count(*)}
aggregations:
- name: amount_wavg
  formula: sum(amount * {weight}) / sum({weight})
  params: [{name: weight, sql: qty}]
joins:
- {target_model: customers, join_pairs: [[customer_id, id]], cardinality: many_to_one}
""",
    ("shop", "customers"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: region_id, type: INT}
- {name: name, type: TEXT}
- {name: city, type: TEXT}
- {name: segment, type: TEXT}
measures:
- {name: customer_count, formula: count(*)}
joins:
- {target_model: regions, join_pairs: [[region_id, id]], cardinality: many_to_one}
""",
    ("shop", "regions"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: country_id, type: INT}
- {name: name, type: TEXT}
joins:
- {target_model: countries, join_pairs: [[country_id, id]], cardinality: many_to_one}
""",
    ("shop", "countries"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: name, type: TEXT}
- {name: iso_code, type: TEXT}
""",
    ("shop", "refunds"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: order_id, type: INT}
- {name: amount, type: DOUBLE}
joins:
- {target_model: orders, name: original_order, join_pairs: [[order_id, id]], cardinality: many_to_one}
""",
    ("shop", "wh"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: name, type: TEXT}
- {name: capacity, type: INT}
""",
    ("wh", "orders"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: amount, type: DOUBLE}
- {name: order_date, type: DATE}
- {name: warehouse_id, type: INT}
- {name: channel, type: TEXT}
joins:
- {target_model: warehouses, join_pairs: [[warehouse_id, id]], cardinality: many_to_one}
""",
    ("wh", "warehouses"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: name, type: TEXT}
- {name: city, type: TEXT}
- {name: channel_code, type: TEXT}
""",
    ("wh", "shop"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: opened_at, type: DATE}
- {name: orders, type: INT}
""",
    ("ops", "tickets"): """\
columns:
- {name: id, type: INT, primary_key: true}
- {name: channel, type: TEXT}
- {name: opened_at, type: TIMESTAMP}
""",
}

PRIORITY = ("shop",)


def write_catalog(root: Path) -> None:
    """The catalog's files under ``root`` (a KB folder, or a SLayer storage folder)."""
    root = Path(root)
    (root / "datasources").mkdir(parents=True, exist_ok=True)
    for name, text in DATASOURCES.items():
        (root / "datasources" / f"{name}.yaml").write_text(text, encoding="utf-8")
    for (ds, model), body in MODELS.items():
        folder = root / "models" / ds
        folder.mkdir(parents=True, exist_ok=True)
        text = _HEAD.format(name=model, ds=ds) + body
        (folder / f"{model}.yaml").write_text(text, encoding="utf-8")
    (root / "priority.yaml").write_text(f"priority: [{', '.join(PRIORITY)}]\n", encoding="utf-8")
