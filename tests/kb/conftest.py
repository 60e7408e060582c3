"""Fixtures of the knowledge-base tests: the shop database and a SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kb.store import KnowledgeStore
from tests.kb.shop import build_shop


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    build_shop(path)
    return path


@pytest.fixture()
def sqlite_store(tmp_path: Path) -> Iterator[KnowledgeStore]:
    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as opened:
        yield opened
