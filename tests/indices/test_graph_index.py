"""The knowledge graph: structural relations, conditioned expansion and join paths."""

from indices.graph import GraphIndex
from ukf import ColumnUKF, EnumUKF, ForeignKey, MetricUKF, PredicateUKF, TableUKF


def _schema():
    orders = TableUKF.create(
        "shop",
        "orders",
        foreign_keys=[
            ForeignKey(columns=("customer_id",), ref_table="customers", ref_columns=("id",))
        ],
    )
    customers = TableUKF.create(
        "shop",
        "customers",
        foreign_keys=[ForeignKey(columns=("region_id",), ref_table="regions", ref_columns=("id",))],
    )
    regions = TableUKF.create("shop", "regions")
    island = TableUKF.create("shop", "audit_log")
    status = ColumnUKF.create(orders, "status")
    amount = ColumnUKF.create(orders, "amount")
    open_ = EnumUKF.create(status, "open")
    metric = MetricUKF.create("order value", "SUM(amount)", columns=[amount])
    predicate = PredicateUKF.create("open orders", "status = 'open'", enums=[open_])
    return locals()


def test_a_matched_enum_brings_its_column_and_table():
    s = _schema()
    graph = GraphIndex()
    graph.add(s.values())
    hits = graph.expand([s["open_"].id], hops=2, relations=["value_of", "column_of"])
    assert [h.ukf_id for h in hits][:2] == [s["status"].id, s["orders"].id]
    assert hits[0].detail == {"hops": 1, "via": s["open_"].id}
    assert hits[0].phrase == "value_of:out" and hits[0].reason == "neighbour"


def test_expansion_is_conditioned_on_relations_and_types():
    s = _schema()
    graph = GraphIndex()
    graph.add(s.values())
    via_metric = graph.expand([s["metric"].id], hops=1)
    assert [h.ukf_id for h in via_metric] == [s["amount"].id]
    predicate_enums = graph.expand([s["predicate"].id], hops=3, types=["table"])
    assert [h.ukf_id for h in predicate_enums] == [s["orders"].id]
    assert graph.expand([s["orders"].id], hops=1, relations=["uses_enum"]) == []


def test_shortest_join_path_between_tables():
    s = _schema()
    graph = GraphIndex()
    graph.add(s.values())
    path = graph.join_path(s["orders"].id, s["regions"].id)
    assert [(step["from"], step["to"]) for step in path] == [
        (s["orders"].id, s["customers"].id),
        (s["customers"].id, s["regions"].id),
    ]
    assert path[0]["columns"] == ["customer_id"] and path[0]["ref_columns"] == ["id"]
    assert graph.join_path(s["orders"].id, s["island"].id) == []


def test_follows_the_store(store):
    s = _schema()
    store.upsert_many(s.values())
    graph = GraphIndex.from_store(store)
    assert s["status"].id in graph
    store.remove(s["status"].id)
    assert graph.refresh(store)
    assert s["status"].id not in graph
    # the column is gone; only the predicate still links to the value
    assert [h.ukf_id for h in graph.expand([s["open_"].id], hops=2)] == [s["predicate"].id]
