"""The student as a cascade tier, end to end: Spider experiences → tuples → a few LoRA steps
on the tiny random Qwen2 → ``almanac distill export --register`` → an ``almanac.toml`` whose
tier ``backend = "student"`` names it, first in ``ALMANAC_CASCADE_TIERS`` → a cascade ask on
concert_singer. The student's answers are garbage (a random 2-layer model), so its tier runs
first, fails to agree and escalates to the real packaged 0.5B (``embedded_model_path``),
which answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.pipeline import AskOptions, ModelTier, Pipeline
from distill.config import LoraSettings
from distill.registry import get_student
from distill.train import train
from server.cli_distill import run_distill_command
from server.llm_factory import LLMTiers
from server.metrics import Metrics
from server.settings import Settings
from tests.distill.conftest import DB
from tests.distill.test_cli_jobs import parse
from tests.distill.tiny import tiny_run_config

pytestmark = pytest.mark.slow  # the 0.5B answers the escalated question (~30 s on 2 cores)


def trained_run(concert, root: Path) -> tuple[Path, Path]:
    """(run directory, base model folder) of a 4-step LoRA run on the tiny student."""
    config = tiny_run_config(
        root,
        concert.store,
        {DB: concert.database},
        concert.retriever,
        lora=LoraSettings(rank=4, alpha=8, dropout=0.0),
        learning_rate=1e-2,
        max_steps=4,
        batch_size=2,
        max_seq_len=2048,
    )
    assert train(config).steps == 4
    return config.output_dir, config.base_model


def test_a_registered_student_is_the_first_tier_of_a_cascade(
    concert, embedded_model_path, tmp_path, monkeypatch, capsys
):
    run, base = trained_run(concert, tmp_path)
    data_dir = tmp_path / "almanac"
    config = tmp_path / "almanac.toml"
    config.write_text(
        f'data_dir = "{data_dir}"\n'
        '[[llm_tiers]]\nname = "default"\nbackend = "gguf"\n'
        f'path = "{embedded_model_path}"\nn_threads = 2\nn_ctx = 4096\nprompt_cache_mb = 0\n'
        '[[llm_tiers]]\nname = "student"\nbackend = "student"\nmodel = "tiny-student"\n'
        "n_threads = 2\nn_ctx = 4096\nprompt_cache_mb = 0\n"
    )
    for name in ("ALMANAC_DATA_DIR", "ALMANAC_LLM_TIERS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ALMANAC_CONFIG", str(config))
    monkeypatch.setenv("ALMANAC_CASCADE_TIERS", '["student", "default"]')
    # the CLI reads the same settings; export registers the student by name
    argv = ["distill", "export", str(run / "final"), "--base", str(base)]
    argv += ["--out", str(run / "export"), "--register", "tiny-student"]
    assert run_distill_command(parse(argv), Settings()) == 0
    assert "registered student 'tiny-student'" in capsys.readouterr().out
    assert run_distill_command(parse(["distill", "list", "--verify"]), Settings()) == 0
    assert capsys.readouterr().out.startswith("tiny-student ")

    settings = Settings()
    assert settings.cascade_tiers == ["student", "default"]
    manifest = get_student(settings.data_dir, "tiny-student").manifest
    assert manifest["run"]["dir"] == str(run.resolve()) and len(manifest["sha256"]) == 64
    metrics = Metrics()
    tiers = LLMTiers(settings.llm_tiers, settings.data_dir, metrics)
    pipeline = Pipeline(
        store=concert.store,
        retriever=concert.retriever,
        database=concert.database,
        database_name=DB,
        tiers=[ModelTier(name, tiers.get(name)) for name in settings.cascade_tiers],
    )
    answer = pipeline.ask("How many singers do we have?", options=AskOptions(cascade=True))
    used = [c.tier for c in answer.candidates]
    assert used[0] == "student", used  # the student is asked first ...
    assert any(t.startswith("default") for t in used), used  # ... and its garbage escalates
    assert answer.tier.startswith("default") and answer.error is None, answer
    assert answer.rows == [[6]], answer.sql
    assert tiers.loaded() == ["default", "student"]
    # the student's model really decoded (llama.cpp over the registered GGUF), without errors
    counted = metrics.render()
    assert 'almanac_llm_calls_total{tier="student",outcome="ok"}' in counted
    assert 'tier="student",outcome="error"' not in counted
    assert 'almanac_llm_tokens_total{tier="student",kind="completion"}' in counted
    assert any(t["backend"] == "student" for t in tiers.describe())
