"""``almanac`` as a separate process over Spider's concert_singer with the real embedded test
model (``TEST_MODEL``) and MiniLM: what the end-to-end tests of a real uvicorn server run.

``almanac init`` (profile, indices, the model's warm-up into the prompt cache) is run once
per session into a data folder (the ``initialized_concert`` fixture of tests/server); each
test serves a copy of it (:meth:`Initialized.copy`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from agents.llm.models import TEST_MODEL


def served_env(data_dir: Path, target_url: str) -> dict[str, str]:
    """The environment of ``almanac`` over ``data_dir``, asking ``target_url``
    (concert_singer) with the test model on two threads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALMANAC_")}
    env.update(
        ALMANAC_DATA_DIR=str(data_dir),
        ALMANAC_CONFIG=str(data_dir / "absent.toml"),
        ALMANAC_EMBEDDER="minilm",
        ALMANAC_LLM_TIERS=json.dumps([{"name": "default", "model": TEST_MODEL, "n_threads": 2}]),
        ALMANAC_TARGET_URL=target_url,
        ALMANAC_TARGET_NAME="concert_singer",
    )
    return env


def run_almanac(data_dir: Path, target_url: str, *args: str) -> str:
    """Run ``almanac *args`` to the end; what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env=served_env(data_dir, target_url),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@dataclass(frozen=True)
class Initialized:
    """A data folder ``almanac init`` filled, and what it printed. Never written into: tests
    serve a copy (:meth:`copy`)."""

    folder: Path
    target_url: str
    output: str

    def copy(self, destination: Path) -> Path:
        """A copy of the data folder at the new ``destination``, its models (never written
        in place: assembled and exported beside, then renamed) hard-linked."""
        shutil.copytree(self.folder, destination, ignore=shutil.ignore_patterns("models"))
        shutil.copytree(self.folder / "models", destination / "models", copy_function=os.link)
        return destination


def init_data_dir(data_dir: Path, target_url: str) -> Initialized:
    """``almanac init --db target_url`` into the new ``data_dir``.

    The model is assembled into it, as on a first ``almanac init``, rather than linked from
    the shared folder: llama-cpp-python points stdout at /dev/null while a model loads, and
    init loads it in the background while it prints, so a model that loads at once can
    swallow init's "profiled ..." line."""
    output = run_almanac(data_dir, target_url, "init", "--db", target_url)
    return Initialized(data_dir, target_url, output)
