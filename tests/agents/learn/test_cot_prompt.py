"""The SQL-gen prompt shows an example's checked CoT beside it only when asked to
(``GenerateOptions.show_cot``): off, or with no passing CoT for the example's current SQL, the
prompt is the one without CoT."""

from __future__ import annotations

from dataclasses import replace

from agents.learn.cot.record import sql_hash, with_cot
from agents.rag.agent import RagContext
from agents.sql.generate import GenerateOptions, SqlGenerator
from indices.evidence import Evidence
from tests.agents.scripted import ScriptedLLM
from ukf import ExperienceUKF

SQL = "SELECT count(*) FROM singer WHERE country = 'France'"
STEPS = ["`singer` holds the singers.", "'France' filters `country`.", "count(*) counts them."]


def _example(**record: object) -> ExperienceUKF:
    plain = ExperienceUKF.create(
        "How many French singers?", SQL, database="concert_singer", labeled=True, verified=True
    )
    if not record:
        return plain
    return with_cot(plain, {"sql_hash": sql_hash(SQL), "passed": True, "steps": STEPS, **record})


def _prompt(example: ExperienceUKF, show_cot: bool) -> str:
    rag = RagContext(
        question="How many singers are from Spain?",
        database="concert_singer",
        evidence=Evidence("How many singers are from Spain?"),
        schema="CREATE TABLE singer (name TEXT, country TEXT)",
        examples=[example],
    )
    generator = SqlGenerator(ScriptedLLM(["x"]), "sqlite", GenerateOptions(show_cot=show_cot))
    return generator.messages(rag)[1]["content"]


def test_the_checked_steps_are_shown_beside_the_example_only_when_asked():
    plain = _prompt(_example(), show_cot=False)
    profiled = _example(model="teacher")
    assert _prompt(profiled, show_cot=False) == plain  # off: byte-identical
    assert _prompt(_example(), show_cot=True) == plain  # no CoT: byte-identical
    shown = _prompt(profiled, show_cot=True)
    expected = "```sql\n-- Steps:\n" + "".join(f"-- {i}. {s}\n" for i, s in enumerate(STEPS, 1))
    assert expected + SQL + "\n```" in shown
    assert shown.replace(expected, "```sql\n") == plain


def test_a_failed_or_stale_cot_is_not_shown():
    plain = _prompt(_example(), show_cot=False)
    failed = _example(passed=False)
    assert _prompt(failed, show_cot=True) == plain
    stale = _example(sql_hash=sql_hash("SELECT 1"))  # about an SQL the example no longer has
    assert _prompt(stale, show_cot=True) == plain


def test_the_steps_replace_the_models_one_line_reasoning():
    with_reasoning = _example(model="teacher")
    resources = {**with_reasoning.content_resources, "cot": "count French singers"}
    example = with_reasoning.clone(content_resources=resources)
    assert isinstance(example, ExperienceUKF)
    assert "-- Reasoning: count French singers" in _prompt(example, show_cot=False)
    shown = _prompt(example, show_cot=True)
    assert "-- Reasoning:" not in shown and "-- 2. 'France' filters `country`." in shown
    assert replace(GenerateOptions(), show_cot=True).show_cot and not GenerateOptions().show_cot
