"""The harness check of the benchmark issue: the gold system scores exactly 1.0."""

from __future__ import annotations

import pytest

from bench.datasets import load_dataset
from bench.report import mean_scores
from bench.run import RunConfig, Runner
from bench.systems import GoldSystem

PERFECT = {"ex": 1.0, "spider_ex": 1.0, "soft_f1": 1.0, "bf_beta": 1.0}


@pytest.mark.slow
def test_gold_scores_one_on_spider_dev(tmp_path):
    dataset = load_dataset("spider_dev")
    results = Runner(dataset, GoldSystem(), RunConfig(out_dir=tmp_path, workers=2)).run()
    assert len(results) == 972 and all(r.scored for r in results)
    assert mean_scores(results) == PERFECT


@pytest.mark.slow
def test_gold_scores_one_on_geoquery_less_its_broken_gold(tmp_path):
    dataset = load_dataset("geoquery")
    results = Runner(dataset, GoldSystem(), RunConfig(out_dir=tmp_path, workers=2)).run()
    failing = {r.id for r in results if not r.scored}
    assert len(results) == 877 and len(failing) == 5
    assert mean_scores(results) == PERFECT
