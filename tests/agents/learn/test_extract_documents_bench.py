"""The AutoFin precision judge of ``bench.extract_documents``: extracted entries matched with
the hand-written pack by name and meaning."""

from __future__ import annotations

from bench.autofin.knowledge import knowledge_pack
from bench.extract_documents import judge, precision
from ukf import KnowledgeUKF, MetricUKF, RuleUKF, SynonymUKF


def _metric(name: str, column: str) -> MetricUKF:
    return MetricUKF.create(
        name, f"SUM({column})", database="autofin", content_resources={"columns": [column]}
    )


def test_matches_by_name_and_meaning():
    pack = knowledge_pack()
    revenue = next(e for e in pack if e.type == "metric" and e.name == "Revenue")
    assert judge(_metric("turnover", "income_nova.report_item_level1"), pack) == revenue.id
    assert judge(_metric("turnover", "income_nova.channel"), pack) is None  # other meaning
    assert judge(_metric("happiness", "income_nova.report_item_level1"), pack) is None
    glossary = KnowledgeUKF.create("BCR", "BCR: budget completion", database="autofin")
    assert judge(glossary, pack) is not None  # a glossary term of the pack
    unknown = KnowledgeUKF.create("happiness index", "how happy", database="autofin")
    assert judge(unknown, pack) is None
    first_rule = next(e for e in pack if e.type == "rule")
    assert judge(RuleUKF.create(first_rule.name.upper(), "same rule"), pack) == first_rule.id
    assert judge(RuleUKF.create("parking policy", "park in zone B"), pack) is None


def test_value_synonyms_need_the_same_value():
    pack = knowledge_pack()
    nickname = next(e for e in pack if e.type == "synonym" and e.content_resources.get("value"))
    r = nickname.content_resources
    right = SynonymUKF.create(
        nickname.name, "x", content_resources={"table": r["table"], "column": r["column"],
                                               "value": r["value"]}
    )  # fmt: skip
    wrong = SynonymUKF.create(
        nickname.name, "x", content_resources={"table": r["table"], "column": r["column"],
                                               "value": "no such value"}
    )  # fmt: skip
    assert judge(right, pack) == nickname.id and judge(wrong, pack) is None
    result = precision([right, wrong], pack)
    assert (result["extracted"], result["matched"], result["precision"]) == (2, 1, 0.5)
    assert result["per_kind"]["value_synonym"]["precision"] == 0.5
    assert result["pack_covered"] == 1
