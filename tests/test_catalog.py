from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.catalog.catalog import Catalog, CatalogProblem, Datasource, Model, load_catalog
from slayer_kb.catalog.resolve import Resolution, Resolver
from slayer_kb.core.errors import (
    AmbiguousEntityError,
    InvalidIdError,
    InvalidInputError,
    NotFoundError,
    ReferenceFormError,
    ResolutionError,
)
from testing import CliRunner, write_test_catalog


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    write_test_catalog(tmp_path)
    return load_catalog(tmp_path)


@pytest.fixture
def unprioritized(tmp_path: Path) -> Catalog:
    write_test_catalog(tmp_path, priority=None)
    return load_catalog(tmp_path)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def test_loads_the_fixture(catalog: Catalog, tmp_path: Path) -> None:
    assert catalog.problems == []
    assert catalog.priority == ["shop"]
    assert list(catalog.datasources) == ["shop", "wh"]
    shop = catalog.datasources["shop"]
    assert shop.description == "The web shop's operational database."
    assert shop.path == tmp_path / "datasources" / "shop.yaml"
    assert list(shop.models) == ["countries", "customers", "orders", "refunds", "regions"]
    assert list(catalog.datasources["wh"].models) == [
        "orders",
        "shop",
        "staging_orders",
        "warehouses",
    ]


def test_model_fields(catalog: Catalog, tmp_path: Path) -> None:
    orders = catalog.datasources["shop"].models["orders"]
    assert orders == Model(
        datasource="shop",
        name="orders",
        description="One row per customer order.",
        columns={
            "id": None,
            "customer_id": "FK to customers.id",
            "amount": "Order total in EUR",
            "cost": None,
            "qty": "Items in the order",
            "status": "paid | refunded | pending",
            "created_at": "Placement time, UTC",
            "refunds": "Number of refunds on the order",
        },
        measures={"aov": "Average order value"},
        aggregations={"amount_wavg": "Amount weighted by quantity"},
        joins=("customers",),
        path=tmp_path / "models" / "shop" / "orders.yaml",
    )
    assert orders.entity == "shop.orders"
    assert list(orders.leaves())[-2:] == ["aov", "amount_wavg"]
    assert orders.leaf_kind("status") == "column"
    assert orders.leaf_kind("aov") == "measure"
    assert orders.leaf_kind("amount_wavg") == "aggregation"
    assert orders.leaf_kind("nope") is None


def test_a_column_shadows_a_measure_of_the_same_name(tmp_path: Path) -> None:
    write(
        tmp_path / "models" / "s" / "m.yaml",
        "columns: [{name: x, description: col}]\nmeasures: [{name: x, description: meas}, {name: "
        "y}]\n",
    )
    model = load_catalog(tmp_path).datasources["s"].models["m"]
    assert model.leaves() == {"x": "col", "y": None}
    assert model.leaf_kind("x") == "column"


def test_missing_folders_give_an_empty_catalog(tmp_path: Path) -> None:
    catalog = load_catalog(tmp_path / "nowhere")
    assert catalog == Catalog({}, [], [])
    assert list(catalog.iter_entities()) == []


def test_names_default_to_file_stems_and_folders_make_datasources(tmp_path: Path) -> None:
    write(tmp_path / "datasources" / "lake.yaml", "type: duckdb\n")
    write(tmp_path / "models" / "legacy" / "events.yaml", "columns: [{name: ts}]\n")
    write(tmp_path / "models" / "legacy" / "empty.yaml", "")
    catalog = load_catalog(tmp_path)
    assert catalog.problems == []
    assert catalog.datasources["lake"] == Datasource(
        "lake", None, tmp_path / "datasources" / "lake.yaml", {}
    )
    legacy = catalog.datasources["legacy"]
    assert legacy.path is None
    assert list(legacy.models) == ["empty", "events"]
    assert legacy.models["events"].columns == {"ts": None}
    assert catalog.priority == []


def test_the_name_key_wins_over_the_file_stem(tmp_path: Path) -> None:
    write(tmp_path / "datasources" / "file.yaml", "name: real\n")
    write(tmp_path / "models" / "real" / "file_name.yaml", "name: model_name\n")
    catalog = load_catalog(tmp_path)
    assert list(catalog.datasources) == ["real"]
    assert list(catalog.datasources["real"].models) == ["model_name"]


def test_iter_entities(tmp_path: Path) -> None:
    write(tmp_path / "datasources" / "s.yaml", "description: Shop\n")
    write(
        tmp_path / "models" / "s" / "m.yaml",
        "description: M\ncolumns: [{name: a, description: A}]\n"
        "measures: [{name: b}]\naggregations: [{name: c, description: C}]\n",
    )
    assert list(load_catalog(tmp_path).iter_entities()) == [
        ("s", "datasource", "Shop"),
        ("s.m", "model", "M"),
        ("s.m.a", "column", "A"),
        ("s.m.b", "measure", None),
        ("s.m.c", "aggregation", "C"),
    ]


@pytest.mark.parametrize(
    ("entity", "exists"),
    [
        ("shop", True),
        ("shop.orders", True),
        ("shop.orders.amount", True),
        ("shop.orders.aov", True),
        ("shop.orders.amount_wavg", True),
        ("wh.staging_orders.raw_payload", True),
        ("nope", False),
        ("shop.nope", False),
        ("shop.orders.nope", False),
        ("shop.orders.amount.x", False),
        ("orders", False),
        ("memory:1", False),
    ],
)
def test_entity_exists(catalog: Catalog, entity: str, exists: bool) -> None:
    assert catalog.entity_exists(entity) is exists


def test_models_named(catalog: Catalog) -> None:
    assert [m.entity for m in catalog.models_named("orders")] == ["shop.orders", "wh.orders"]
    assert [m.entity for m in catalog.models_named("shop")] == ["wh.shop"]
    assert catalog.models_named("nope") == []


def test_priority_as_a_bare_list(tmp_path: Path) -> None:
    write(tmp_path / "priority.yaml", "- wh\n- shop\n")
    assert load_catalog(tmp_path).priority == ["wh", "shop"]


# ---------------------------------------------------------------------------------------------
# Broken files: reported with a line, skipped, never raised
# ---------------------------------------------------------------------------------------------


def only_problem(catalog: Catalog) -> CatalogProblem:
    assert len(catalog.problems) == 1
    return catalog.problems[0]


def test_bad_yaml_is_a_problem_with_its_line(catalog: Catalog, tmp_path: Path) -> None:
    path = write(
        tmp_path / "models" / "shop" / "broken.yaml", "name: broken\ncolumns:\n  - a\n bad: 1\n"
    )
    catalog = load_catalog(tmp_path)
    assert only_problem(catalog) == CatalogProblem(
        path, 4, "invalid YAML: did not find expected key"
    )
    assert "broken" not in catalog.datasources["shop"].models
    assert "orders" in catalog.datasources["shop"].models


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "name: m\ncolumns: {id: 1}\n",
            2,
            "'columns' must be a list of mappings with a 'name', got a mapping",
        ),
        (
            "columns:\n- {name: a}\n- just_a_name\n",
            3,
            "columns[1]: expected a mapping with a 'name', got a string",
        ),
        (
            "measures:\n- {formula: sum(x)}\n",
            2,
            "measures[0]: 'name' must be a name of letters, digits, '_' and '-', got nothing (null)",
        ),
        (
            "columns:\n- name: a\n  description: [x]\n",
            3,
            "columns[0]: 'description' must be a string, got a list",
        ),
        (
            "columns:\n- {name: 'has space'}\n",
            2,
            "columns[0]: 'name' must be a name of letters, digits, '_' and '-', got 'has space'",
        ),
        (
            "joins:\n- {join_pairs: [[a, b]]}\n",
            2,
            "joins[0]: expected a mapping with a 'target_model' string",
        ),
        ("description: 42\n", 1, "'description' must be a string, got a number"),
        ("name: 7\n", 1, "'name' must be a string, got a number"),
        (
            "name: a.b\n",
            1,
            "model name 'a.b' cannot be referenced: use only letters, digits, '_' and '-'",
        ),
        (
            "- a\n- b\n",
            1,
            "expected a mapping describing a model (name, columns, measures, joins, ...), got a "
            "list",
        ),
    ],
)
def test_wrong_types_are_problems(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = write(tmp_path / "models" / "s" / "m.yaml", text)
    write(tmp_path / "models" / "s" / "ok.yaml", "columns: [{name: a}]\n")
    catalog = load_catalog(tmp_path)
    assert only_problem(catalog) == CatalogProblem(path, line, message)
    assert list(catalog.datasources["s"].models) == ["ok"]


def test_unsafe_yaml_tags_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write(
        tmp_path / "datasources" / "evil.yaml",
        f"name: !!python/object/apply:os.system ['touch {marker}']\n",
    )
    problem = only_problem(load_catalog(tmp_path))
    assert problem.path == path
    assert problem.message.startswith("invalid YAML: ")
    assert not marker.exists()


def test_non_utf8_file_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "models" / "s" / "m.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"name: caf\xe9\n")
    problem = only_problem(load_catalog(tmp_path))
    assert (problem.path, problem.line) == (path, None)
    assert problem.message == "not UTF-8 text (invalid continuation byte at byte 9)"


def test_duplicates_and_bad_folder_names_are_problems(tmp_path: Path) -> None:
    write(tmp_path / "datasources" / "a.yaml", "name: s\n")
    second = write(tmp_path / "datasources" / "b.yaml", "name: s\n")
    write(tmp_path / "models" / "s" / "m.yaml", "columns: [{name: x}]\n")
    other = write(tmp_path / "models" / "s" / "n.yaml", "name: m\n")
    write(tmp_path / "models" / "bad name" / "m.yaml", "name: m\n")
    catalog = load_catalog(tmp_path)
    assert [str(p) for p in catalog.problems] == [
        f"{second}: datasource 's' is also defined in {tmp_path / 'datasources' / 'a.yaml'}",
        f"{tmp_path / 'models' / 'bad name'}: datasource name 'bad name' cannot be referenced: "
        "use only letters, digits, '_' and '-'",
        f"{other}: model 'm' is also defined in {tmp_path / 'models' / 's' / 'm.yaml'}",
    ]
    assert catalog.datasources["s"].models["m"].columns == {"x": None}


@pytest.mark.parametrize("text", ["priority: shop\n", "priority: [shop, 3]\n", "7\n"])
def test_a_bad_priority_file_is_a_problem(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "priority.yaml", text)
    catalog = load_catalog(tmp_path)
    assert catalog.priority == []
    problem = only_problem(catalog)
    assert (problem.path, problem.line) == (path, 1)
    assert problem.message == "expected {priority: [datasource, ...]}: a list of datasource names"


def test_a_bad_datasource_file_keeps_its_models(tmp_path: Path) -> None:
    path = write(tmp_path / "datasources" / "s.yaml", "description: [1, 2]\n")
    write(tmp_path / "models" / "s" / "m.yaml", "name: m\n")
    catalog = load_catalog(tmp_path)
    assert only_problem(catalog) == CatalogProblem(
        path, 1, "'description' must be a string, got a list"
    )
    assert catalog.datasources["s"].path is None
    assert list(catalog.datasources["s"].models) == ["m"]


# ---------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------

# SLayer's words: whenever a datasource's name is also a model's (wh.shop), whatever follows.
DS_AND_MODEL = (
    "'shop' is both a datasource and a model; interpreted as datasource. "
    "To force the model interpretation, qualify as <other_ds>.shop..."
)


@pytest.mark.parametrize(
    ("ref", "source", "entity", "warnings"),
    [
        # steps 1, 4, 5: qualified names, whitespace, the datasource winning over a model
        ("  shop.orders.amount \n", None, "shop.orders.amount", [DS_AND_MODEL]),
        ("wh.orders", None, "wh.orders", []),
        ("shop", None, "shop", [DS_AND_MODEL]),
        ("shop.orders", None, "shop.orders", [DS_AND_MODEL]),  # wh.shop has a column 'orders'
        ("shop.customers", None, "shop.customers", [DS_AND_MODEL]),
        ("wh.shop", None, "wh.shop", []),
        ("wh.shop.opened_at", None, "wh.shop.opened_at", []),
        ("wh", None, "wh", []),
        # step 3: aggregations in both syntaxes name their column
        ("sum(shop.orders.amount)", None, "shop.orders.amount", [DS_AND_MODEL]),
        ("shop.orders.amount:sum", None, "shop.orders.amount", [DS_AND_MODEL]),
        ("sum(amount)", "orders", "shop.orders.amount", []),
        ("amount:weighted_avg(weight=qty)", "orders", "shop.orders.amount", []),
        ("weighted_avg(amount, weight=qty)", "orders", "shop.orders.amount", []),
        ("count(distinct amount)", "orders", "shop.orders.amount", []),
        ("count(*)", "orders", "shop.orders", []),
        ("*:count", "wh.orders", "wh.orders", []),
        ("count(customers.*)", None, "shop.customers", []),
        ("warehouses.*:count", None, "wh.warehouses", []),
        ("count(orders.customers.*)", None, "shop.customers", []),
        # step 6: bare names
        ("status", "orders", "shop.orders.status", []),
        ("aov", "orders", "shop.orders.aov", []),
        ("amount_wavg", "orders", "shop.orders.amount_wavg", []),
        ("amount", "wh.orders", "wh.orders.amount", []),
        ("refunds", "orders", "shop.orders.refunds", []),
        ("orders", "wh.shop", "wh.shop.orders", []),
        ("customers", None, "shop.customers", []),
        ("orders", None, "shop.orders", []),
        ("warehouses", None, "wh.warehouses", []),
        ("staging_orders", None, "wh.staging_orders", []),
        (
            "refunds",
            None,
            "shop.refunds",
            [
                "'refunds' is both a model and a column on ['orders']; resolved as the model. "
                "Qualify as <model>.refunds to refer to the column."
            ],
        ),
        ("status", None, "shop.orders.status", []),
        ("iso_code", None, "shop.countries.iso_code", []),
        ("city", None, "shop.customers.city", []),
        ("order_date", None, "wh.orders.order_date", []),
        ("raw_payload", None, "wh.staging_orders.raw_payload", []),
        ("city", "wh.orders", "wh.warehouses.city", []),
        # step 7: walking joins; intermediate hops dropped
        ("orders.customers", None, "shop.customers", []),
        ("orders.customers.regions.name", None, "shop.regions.name", []),
        ("orders.customers.regions.countries", None, "shop.countries", []),
        ("shop.orders.customers.regions.countries.iso_code", None, "shop.countries.iso_code", [DS_AND_MODEL]),
        ("customers.regions.name", "orders", "shop.regions.name", []),
        ("orders.warehouses.city", "wh.orders", "wh.warehouses.city", []),
        ("orders.amount", None, "shop.orders.amount", []),
        ("orders.aov", None, "shop.orders.aov", []),
        ("staging_orders.raw_payload", None, "wh.staging_orders.raw_payload", []),
        # joins are walked in either direction (SLayer's join walker)
        ("regions.customers", None, "shop.customers", []),
        ("regions.customers.name", None, "shop.customers.name", []),
        ("countries.regions.customers.orders.amount", None, "shop.orders.amount", []),
        ("warehouses.orders.channel", None, "wh.orders.channel", []),
        ("regions.name", "customers", "shop.regions.name", []),
    ],
)
def test_resolves(
    catalog: Catalog, ref: str, source: str | None, entity: str, warnings: list[str]
) -> None:
    assert Resolver(catalog).resolve(ref, source) == Resolution(entity, warnings)


def test_segments_may_hold_dashes_and_digits(tmp_path: Path) -> None:
    write(tmp_path / "models" / "s-2" / "order-items.yaml", "columns: [{name: size_3d}, {name: 3d_size}]\n")
    resolver = Resolver(load_catalog(tmp_path))
    assert resolver.resolve("order-items.size_3d").entity == "s-2.order-items.size_3d"
    assert resolver.resolve("s-2.order-items").entity == "s-2.order-items"
    # As in SLayer, a segment starts with a letter or '_' (SLayer's columns cannot start otherwise).
    with pytest.raises(ResolutionError) as caught:
        resolver.resolve("3d_size")
    assert str(caught.value) == (
        "'3d_size' contains an invalid identifier segment. (Each part between dots is a name: a "
        "letter or '_', then letters, digits, '_' or '-'.)"
    )


@pytest.mark.parametrize(
    ("ref", "source", "error", "message"),
    [
        (
            "",
            None,
            ResolutionError,
            "entity reference is empty: name a datasource, model, column or memory:<id>.",
        ),
        (
            "   ",
            None,
            ResolutionError,
            "entity reference is empty: name a datasource, model, column or memory:<id>.",
        ),
        (
            "zzz",
            None,
            ResolutionError,
            "Entity 'zzz' not found in any datasource (checked all known datasources).",
        ),
        (
            "zzz",
            "orders",
            ResolutionError,
            "Entity 'zzz' not found in any datasource (checked all known datasources).",
        ),
        (
            "zzz.amount",
            None,
            ResolutionError,
            "'zzz' is neither a known datasource nor a saved model. (segment of 'zzz.amount').",
        ),
        (
            "id",
            None,
            AmbiguousEntityError,
            "Ambiguous bare name 'id' matches columns / measures / aggregations on ['countries', "
            "'customers', 'orders', 'refunds', 'regions'] in datasource 'shop'. Qualify as '<model>.id'.",
        ),
        (
            "name",
            "orders",
            AmbiguousEntityError,
            "Ambiguous bare name 'name' matches columns / measures / aggregations on ['countries', "
            "'customers', 'regions'] in datasource 'shop'. Qualify as '<model>.name'.",
        ),
        (
            "shop.nope",
            None,
            ResolutionError,
            "No model 'nope' in datasource 'shop'. "
            "Its models: ['countries', 'customers', 'orders', 'refunds', 'regions'].",
        ),
        (
            "shop.orders.nope",
            None,
            ResolutionError,
            "Unknown field 'nope' on model 'orders' (datasource 'shop'): no column, measure or aggregation of "
            "that name, and 'nope' is not a join target on model 'orders'.",
        ),
        (
            "orders.nope",
            None,
            ResolutionError,
            "Unknown field 'nope' on model 'orders' (datasource 'shop'): no column, measure or aggregation of "
            "that name, and 'nope' is not a join target on model 'orders'.",
        ),
        (
            "orders.nope.name",
            None,
            ResolutionError,
            "'nope' is not a join target on model 'orders'.",
        ),
        (
            "orders.amount.x",
            None,
            ResolutionError,
            "'amount' is not a join target on model 'orders'.",
        ),
        (
            "orders.regions.name",
            None,
            ResolutionError,
            "'regions' is not a join target on model 'orders'.",
        ),
        (
            "shop..orders",
            None,
            ReferenceFormError,
            "'shop..orders' contains an invalid identifier segment. (Each part between dots is a name: a "
            "letter or '_', then letters, digits, '_' or '-'.)",
        ),
        (
            ".orders",
            None,
            ReferenceFormError,
            "'.orders' contains an invalid identifier segment. (Each part between dots is a name: a "
            "letter or '_', then letters, digits, '_' or '-'.)",
        ),
        (
            "orders amount",
            None,
            ReferenceFormError,
            "'orders amount' contains an invalid identifier segment. (Each part between dots is a name: a "
            "letter or '_', then letters, digits, '_' or '-'.)",
        ),
        (
            "shop.orders.am$ount",
            None,
            ReferenceFormError,
            "'shop.orders.am$ount' contains an invalid identifier segment. (Each part between dots is a name: a "
            "letter or '_', then letters, digits, '_' or '-'.)",
        ),
        (
            "count(*)",
            None,
            ResolutionError,
            "'count(*)' requires a model context: write 'count(<model>.*)' or invoke from a query "
            "that has a source_model.",
        ),
        (
            "*:count",
            None,
            ResolutionError,
            "'count(*)' requires a model context: write 'count(<model>.*)' or invoke from a query "
            "that has a source_model.",
        ),
        (
            "sum(*)",
            "orders",
            ReferenceFormError,
            "'sum(*)' is not a valid entity reference; use 'count(*)' to refer to a model's row count.",
        ),
        (
            "sum(amount - cost)",
            "orders",
            ReferenceFormError,
            "'sum(amount - cost)' is not a single aggregated column reference; only the `agg(column)` "
            "form names an entity. Name its columns one by one, or pass the whole SlayerQuery (--query; in the "
            "MCP tools, save_memory's linked_entities or search's query).",
        ),
        (
            "sum()",
            None,
            ReferenceFormError,
            "Invalid Mode-B expression 'sum()': aggregation 'sum' requires a value argument, e.g. sum(column).",
        ),
        (
            "orders.customers.orders",
            None,
            ResolutionError,
            "Circular join detected resolving 'customers.orders' from 'orders': hop 'orders' revisits "
            "model 'orders'.",
        ),
        (
            "amount",
            "nope",
            ResolutionError,
            "Source model not found: 'nope'.",
        ),
        (
            "amount",
            "nope.orders",
            ResolutionError,
            "source_model 'nope.orders' must be '<model>' or '<datasource>.<model>'; "
            "there is no datasource 'nope'.",
        ),
        (
            "amount",
            "shop.orders.amount",
            ResolutionError,
            "source_model 'shop.orders.amount' must be '<model>' or '<datasource>.<model>'.",
        ),
        (
            "amount",
            "shop.nope",
            ResolutionError,
            "No model 'nope' in datasource 'shop'. "
            "Its models: ['countries', 'customers', 'orders', 'refunds', 'regions'].",
        ),
    ],
)
def test_resolution_errors(
    catalog: Catalog, ref: str, source: str | None, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        Resolver(catalog).resolve(ref, source)
    assert type(caught.value) is error
    assert str(caught.value) == message


def test_a_model_in_several_datasources_without_priority_is_ambiguous(
    unprioritized: Catalog,
) -> None:
    resolver = Resolver(unprioritized)
    for ref in ("orders", "orders.amount", "count(orders.*)"):
        with pytest.raises(AmbiguousEntityError) as caught:
            resolver.resolve(ref)
        assert str(caught.value) == (
            "Model 'orders' exists in multiple datasources: ['shop', 'wh']. Specify a data_source or "
            "set a datasource priority to disambiguate: write '<datasource>.orders' in an entity "
            "reference, or list the datasources in priority.yaml."
        )
    with pytest.raises(AmbiguousEntityError, match="Model 'orders' exists in multiple"):
        resolver.resolve("status", "orders")
    assert resolver.resolve("shop.orders").entity == "shop.orders"


def test_a_leaf_in_two_unprioritized_datasources_is_ambiguous(unprioritized: Catalog) -> None:
    with pytest.raises(AmbiguousEntityError) as caught:
        Resolver(unprioritized).resolve("city")
    assert str(caught.value) == (
        "Ambiguous bare name 'city' matches columns in datasources ['shop', 'wh'], and none of "
        "them "
        "is in the priority list. Qualify as '<ds>.<model>.city' or add a priority.yaml."
    )


def test_a_leaf_in_one_datasource_needs_no_priority(unprioritized: Catalog) -> None:
    resolver = Resolver(unprioritized)
    assert resolver.resolve("order_date").entity == "wh.orders.order_date"
    assert resolver.resolve("iso_code").entity == "shop.countries.iso_code"


def test_the_priority_list_decides(tmp_path: Path) -> None:
    write_test_catalog(tmp_path, priority=["wh", "shop"])
    resolver = Resolver(load_catalog(tmp_path))
    assert resolver.resolve("orders").entity == "wh.orders"
    assert resolver.resolve("city").entity == "wh.warehouses.city"
    assert resolver.resolve("count(*)", "orders").entity == "wh.orders"
    assert resolver.resolve("status").entity == "shop.orders.status"


def test_unknown_names_on_the_priority_list_are_ignored(tmp_path: Path) -> None:
    write_test_catalog(tmp_path, priority=["ghost", "wh"])
    assert Resolver(load_catalog(tmp_path)).resolve("orders").entity == "wh.orders"


def test_the_source_models_datasource_is_preferred(unprioritized: Catalog) -> None:
    # A query runs against one datasource: its names mean that datasource's, priority or not.
    resolver = Resolver(unprioritized)
    assert resolver.resolve("orders.amount", "shop.customers").entity == "shop.orders.amount"
    assert resolver.resolve("orders", "wh.warehouses").entity == "wh.orders"
    assert resolver.resolve("city", "wh.orders").entity == "wh.warehouses.city"
    assert resolver.resolve("city", "shop.regions").entity == "shop.customers.city"


def test_a_leaf_that_is_also_a_join_target(tmp_path: Path) -> None:
    write(
        tmp_path / "models" / "s" / "a.yaml",
        "columns: [{name: b}]\njoins: [{target_model: b}]\n",
    )
    write(tmp_path / "models" / "s" / "b.yaml", "columns: [{name: x}]\n")
    resolver = Resolver(load_catalog(tmp_path))
    # The leaf wins, without a word, as in SLayer; 's.b' names the model.
    assert resolver.resolve("a.b") == Resolution("s.a.b", [])
    assert resolver.resolve("a.b.x") == Resolution("s.b.x", [])
    # count(m.*) resolves as SLayer resolves m: here the leaf.
    assert resolver.resolve("count(a.b.*)") == Resolution("s.a.b", [])


def test_named_joins_are_walked_by_name_from_either_end(tmp_path: Path) -> None:
    write(tmp_path / "models" / "s" / "orders.yaml", "columns: [{name: id}, {name: buyer_id}, {name: seller_id}]\n"
          "joins:\n- {target_model: people, name: buyer}\n- {target_model: people, name: seller}\n")
    write(tmp_path / "models" / "s" / "people.yaml", "columns: [{name: id}, {name: city}]\n")
    resolver = Resolver(load_catalog(tmp_path))
    assert resolver.resolve("orders.buyer.city") == Resolution("s.people.city", [])
    assert resolver.resolve("people.seller.id") == Resolution("s.orders.id", [])
    # Two joins between the same models: the model's name alone does not say which (SLayer's rule).
    with pytest.raises(AmbiguousEntityError) as caught:
        resolver.resolve("orders.people.city")
    assert str(caught.value) == (
        "Ambiguous join hop 'orders' \u2192 'people': 2 edges connect these models and no edge name "
        "resolves it. Name the joins (name: ...) and walk them by name."
    )


def test_a_join_to_a_missing_model(tmp_path: Path) -> None:
    write(tmp_path / "models" / "s" / "a.yaml", "joins: [{target_model: ghost}]\n")
    with pytest.raises(ResolutionError) as caught:
        Resolver(load_catalog(tmp_path)).resolve("a.ghost")
    assert str(caught.value) == (
        "'ghost' is not a join target on model 'a'. It joins 'ghost', which is not a model of datasource 's'."
    )


def test_a_long_model_list_is_cut_short(tmp_path: Path) -> None:
    for i in range(60):
        write(tmp_path / "models" / "s" / f"m{i:02d}.yaml", "")
    with pytest.raises(ResolutionError) as caught:
        Resolver(load_catalog(tmp_path)).resolve("s.nope")
    listed = [f"m{i:02d}" for i in range(50)]
    assert str(caught.value) == (
        f"No model 'nope' in datasource 's'. Its models: {listed} and 10 more."
    )


def test_measures_and_aggregations_are_ambiguous_too(tmp_path: Path) -> None:
    write(tmp_path / "models" / "s" / "a.yaml", "measures: [{name: total}]\n")
    write(tmp_path / "models" / "s" / "b.yaml", "aggregations: [{name: total}]\n")
    with pytest.raises(AmbiguousEntityError) as caught:
        Resolver(load_catalog(tmp_path)).resolve("total")
    assert str(caught.value) == (
        "Ambiguous bare name 'total' matches columns / measures / aggregations on ['a', 'b'] in "
        "datasource 's'. Qualify as '<model>.total'."
    )


def test_resolve_model(catalog: Catalog) -> None:
    resolver = Resolver(catalog)
    assert resolver.resolve_model("orders") == Resolution("shop.orders", [])
    assert resolver.resolve_model(" wh.orders ") == Resolution("wh.orders", [])
    # A source model is always a model: 'shop' here is wh's model, not the datasource.
    assert resolver.resolve_model("shop") == Resolution("wh.shop", [])
    with pytest.raises(InvalidInputError) as caught:
        resolver.resolve_model("  ")
    assert str(caught.value) == (
        "source_model must be a model name: '<model>' or '<datasource>.<model>'."
    )


def test_a_reference_must_be_a_string(catalog: Catalog) -> None:
    with pytest.raises(InvalidInputError) as caught:
        Resolver(catalog).resolve(42)  # type: ignore[arg-type]
    assert str(caught.value) == "An entity reference must be a string, got a number."


# ---------------------------------------------------------------------------------------------
# memory:<id>
# ---------------------------------------------------------------------------------------------


def strict_id(memory_id: str) -> None:
    if not memory_id or "/" in memory_id:
        raise InvalidIdError(f"Memory id '{memory_id}' is not valid.")


def test_memory_references(catalog: Catalog) -> None:
    asked: list[str] = []

    def exists(memory_id: str) -> bool:
        asked.append(memory_id)
        return memory_id in {"1", "kb.policy"}

    resolver = Resolver(catalog, memory_exists=exists, check_id=strict_id)
    assert resolver.resolve(" memory:kb.policy ") == Resolution("memory:kb.policy", [])
    assert resolver.resolve("memory:1", "orders") == Resolution("memory:1", [])
    with pytest.raises(NotFoundError) as caught:
        resolver.resolve("memory:zzz")
    assert str(caught.value) == "No memory with id 'zzz'."
    with pytest.raises(InvalidIdError, match="Memory id 'a/b' is not valid."):
        resolver.resolve("memory:a/b")
    assert asked == ["kb.policy", "1", "zzz"]  # an invalid id is never looked up


def test_a_bare_number_is_never_a_memory(catalog: Catalog) -> None:
    resolver = Resolver(catalog, memory_exists=lambda _id: True)
    with pytest.raises(ResolutionError, match="'42' contains an invalid identifier segment"):
        resolver.resolve("42")


def test_memories_do_not_exist_by_default(catalog: Catalog) -> None:
    with pytest.raises(NotFoundError, match="No memory with id '1'."):
        Resolver(catalog).resolve("memory:1")


def test_reloading_sees_a_same_size_rewrite_and_reuses_unchanged_files(tmp_path: Path) -> None:
    changed = write(tmp_path / "models" / "s" / "a.yaml", "columns: [{name: aa}]\n")
    write(tmp_path / "models" / "s" / "b.yaml", "columns: [{name: x}]\n")
    broken = write(tmp_path / "models" / "s" / "c.yaml", "columns: 1\n")
    first = load_catalog(tmp_path)
    changed.write_text("columns: [{name: bb}]\n", encoding="utf-8")
    second = load_catalog(tmp_path)
    assert second.datasources["s"].models["a"].columns == {"bb": None}
    assert second.datasources["s"].models["b"] is first.datasources["s"].models["b"]
    assert (
        second.problems
        == first.problems
        == [
            CatalogProblem(
                broken, 1, "'columns' must be a list of mappings with a 'name', got a number"
            )
        ]
    )


def test_a_catalog_file_repeating_a_key_is_reported_as_a_memory_file_is(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """YAML keeps the last of two equal keys without a word: validate said nothing of a model or
    priority list edited into holding one twice, where a memory file's is "duplicate key"."""
    root = indexed_example_kb.root
    (root / "priority.yaml").write_text("priority: [shop, wh]\npriority: [wh, shop]\n", encoding="utf-8")
    with (root / "models" / "shop" / "regions.yaml").open("a", encoding="utf-8") as model:
        model.write("description: Regions again\n")
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    lines = (root / "models" / "shop" / "regions.yaml").read_text(encoding="utf-8").splitlines()
    first = next(n for n, line in enumerate(lines, 1) if line.startswith("description:"))
    assert (checked.returncode, [line for line in checked.stdout.splitlines() if "duplicate" in line]) == (1, [
        f"models/shop/regions.yaml:{len(lines)}: catalog: duplicate key 'description' (first on line {first}); keep one",
        "priority.yaml:2: catalog: duplicate key 'priority' (first on line 1); keep one"])


def test_a_block_mapping_repeating_a_key_below_the_top_is_reported_in_catalog_and_memory_files(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Only the top level and flow mappings were checked: a column written as a block with
    ``name:`` twice renamed it without a word (``id`` read as ``ident``), and a query's
    ``source_model:`` written twice was read as the second."""
    root = indexed_example_kb.root
    model = root / "models" / "shop" / "regions.yaml"
    text = model.read_text(encoding="utf-8")
    model.write_text(text.replace("- {name: id, sql: id, type: INT, primary_key: true}\n",
                                  "- name: id\n  sql: id\n  type: INT\n  name: ident\n"), encoding="utf-8")
    number = text.splitlines().index("- {name: id, sql: id, type: INT, primary_key: true}") + 1
    (root / "memories" / "kb.twice.yaml").write_text(
        "learning: Top regions.\nentities:\n- shop.regions\nquery:\n  source_model: regions\n"
        "  source_model: orders\ncreated_at: '2026-01-01T00:00:00Z'\n", encoding="utf-8")
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    assert (checked.returncode, [line for line in checked.stdout.splitlines() if "duplicate" in line]) == (1, [
        "memories/kb.twice.yaml:6: duplicate key 'source_model' (first on line 5); keep one",
        f"models/shop/regions.yaml:{number + 3}: catalog: duplicate key 'name' (first on line {number}); keep one"])


def test_a_flow_mapping_repeating_a_key_is_reported_in_catalog_and_memory_files(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Only top-level keys were checked: a column ``{name: amount, name: total}`` read as
    ``total`` (amount gone, unsaid), and a query's ``{column: a, column: b}`` as ``b``."""
    root = indexed_example_kb.root
    model = root / "models" / "shop" / "regions.yaml"
    lines = model.read_text(encoding="utf-8").splitlines()
    number = next(n for n, line in enumerate(lines, 1) if line.startswith("- {name: "))
    lines[number - 1] = lines[number - 1].replace("{name: ", "{name: twice, name: ", 1)
    model.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "memories" / "kb.twice.yaml").write_text(
        "learning: Top regions.\nentities:\n- shop.regions\nquery:\n  source_model: regions\n"
        "  order:\n  - {column: name, direction: asc, column: id}\ncreated_at: '2026-01-01T00:00:00Z'\n",
        encoding="utf-8")
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    assert (checked.returncode, [line for line in checked.stdout.splitlines() if "duplicate" in line]) == (1, [
        "memories/kb.twice.yaml:7: duplicate key 'column' (first on line 7); keep one",
        f"models/shop/regions.yaml:{number}: catalog: duplicate key 'name' (first on line {number}); keep one"])
