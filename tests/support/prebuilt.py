"""What several slow tests need, built once per test session instead of once per test.

- The packaged models (the 0.5B test model, the demo's 1.5B), assembled where ``make demo``
  puts them (``agents.llm.models.default_data_dir()``); a test's data folder links to them
  (:func:`link_models`) instead of assembling a gigabyte into it. The MiniLM ONNX export
  that the server keeps next to them is shared the same way.
- The AutoFin demo's data folder as ``almanac demo --no-serve`` builds it from nothing
  (:func:`build_demo`: generated database, profile, knowledge pack, worked examples, keys, a
  queued describe job) with what it printed. Tests that write take a copy (:func:`copy_demo`,
  a copy of a few SQLite files); the build itself is never changed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from filelock import FileLock

from agents.llm.models import DEFAULT_MODEL, TEST_MODEL, default_data_dir, pull
from server.cli_agents import TARGET_FILE

Built = TypeVar("Built")


def shared_session_build(
    factory: pytest.TempPathFactory, name: str, build: Callable[[Path], Built]
) -> Built:
    """``build(folder)`` run once per test run, its result shared by every pytest-xdist worker.

    The first worker to ask builds in ``<run's temp root>/name`` under a file lock and pickles
    the result beside it; the others wait on the lock and read it back. Without xdist the
    root is the session's own temp folder. A build that failed leaves no result, so the next
    worker to ask tries again in a clean folder.
    """
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers of this run, fresh for each run
    folder = root / name
    result_file = root / f"{name}.pickle"
    with FileLock(str(root / f"{name}.lock")):
        if result_file.exists():
            return pickle.loads(result_file.read_bytes())
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        result = build(folder)
        result_file.write_bytes(pickle.dumps(result))
        return result


def packaged_model(name: str) -> Path:
    """The GGUF file of packaged model ``name``, assembled once in the shared folder."""
    return pull(name, default_data_dir(), progress=False)


def packaged_models(*names: str) -> Path:
    """The folder holding the packaged models ``names``, assembled there once."""
    for name in names:
        packaged_model(name)
    return default_data_dir() / "models"


def link_models(data_dir: Path, *names: str) -> Path:
    """Make ``data_dir/models`` the shared models folder, holding ``names``; ``data_dir``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "models").symlink_to(packaged_models(*names), target_is_directory=True)
    return data_dir


@dataclass(frozen=True)
class DemoBuild:
    """A data folder as ``almanac demo --no-serve`` left it, and what the command printed."""

    folder: Path
    output: str


def build_demo(folder: Path) -> DemoBuild:
    """Run ``almanac demo --no-serve`` in the new data folder ``folder`` (models linked)."""
    from server.cli import main

    link_models(folder, DEFAULT_MODEL, TEST_MODEL)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["--data-dir", str(folder), "demo", "--no-serve"])
    assert code == 0, printed.getvalue()
    return DemoBuild(folder, printed.getvalue())


def copy_demo(build: DemoBuild, destination: Path) -> Path:
    """A copy of the demo's data folder in ``destination`` (a new folder, or a data folder
    with its own ``models``, which is kept), its remembered target pointing into the copy;
    ``destination``."""
    own_models = (destination / "models").exists()

    def ignored(folder: str, names: list[str]) -> list[str]:
        return ["models"] if own_models and Path(folder) == build.folder else []

    shutil.copytree(build.folder, destination, symlinks=True, ignore=ignored, dirs_exist_ok=True)
    target_file = destination / TARGET_FILE
    if target_file.exists():
        target = json.loads(target_file.read_text())
        target["url"] = target["url"].replace(str(build.folder), str(destination))
        target_file.write_text(json.dumps(target))
    return destination
