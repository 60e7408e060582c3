"""Fixtures of the benchmark tests: an AutoFin build, made once per module that asks."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from bench.autofin import generate
from bench.autofin.pipeline import Summary

AUTOFIN_SEED = 7


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Summary]:
    """AutoFin generated with seed 7 into a temporary folder (~300 MB, removed after)."""
    folder = tmp_path_factory.mktemp("autofin")
    yield generate(folder / "a", seed=AUTOFIN_SEED, progress=False)
    shutil.rmtree(folder, ignore_errors=True)
