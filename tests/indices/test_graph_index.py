"""The knowledge graph: structural relations, conditioned expansion and join paths."""

from indices.graph import GraphIndex
from ukf import (
    ColumnUKF,
    EnumUKF,
    ForeignKey,
    KnowledgeUKF,
    MetricUKF,
    PredicateUKF,
    TableUKF,
)
from ukf.relations import Related


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


def _join(left: TableUKF, right: TableUKF, column: str) -> KnowledgeUKF:
    """A join declared by a knowledge entry (as mining writes one), not by the tables."""
    edge = Related(
        subject=left.id,
        relation="joins",
        object=right.id,
        resources={"columns": [column], "ref_columns": ["id"]},
    )
    return KnowledgeUKF.create(f"join {left.name} {right.name}", "a join", related=[edge])


def test_a_removed_or_replaced_entry_takes_the_edges_it_declared_with_it():
    s = _schema()
    graph = GraphIndex()
    graph.add(s.values())
    mined = _join(s["regions"], s["island"], "region_id")
    graph.add([mined])
    assert [step["to"] for step in graph.join_path(s["orders"].id, s["island"].id)][-1] == (
        s["island"].id
    )
    graph.add([mined.clone(related=[])])  # replaced without its edge
    assert graph.join_path(s["orders"].id, s["island"].id) == []
    graph.add([mined])
    graph.remove([mined.id])  # deactivated: the tables are no longer joined through it
    assert graph.join_path(s["regions"].id, s["island"].id) == []
    assert (s["island"].id, "joins", "in") not in graph.neighbours(s["regions"].id)


def test_a_relation_declared_twice_survives_the_removal_of_one_owner():
    s = _schema()
    graph = GraphIndex()
    graph.add(s.values())
    duplicate = _join(s["orders"], s["customers"], "customer_id")  # the FK, mined again
    graph.add([duplicate])
    assert graph.neighbours(s["orders"].id, ["joins"], "out") == [
        (s["customers"].id, "joins", "out")
    ]
    graph.remove([duplicate.id])
    assert len(graph.join_path(s["orders"].id, s["regions"].id)) == 2
