"""Checkpoints of a training run: find the last one, and check it before resuming from it.

The Trainer writes ``checkpoint-<step>/`` folders into the run directory. Resuming reads the
last one; a checkpoint whose state or weights do not read (a run killed while writing, a
truncated copy) raises :class:`CorruptCheckpointError` naming the file, instead of a deep
stack trace from the middle of the Trainer.
"""

from __future__ import annotations

import json
from pathlib import Path

from safetensors import SafetensorError, safe_open
from transformers.trainer_utils import get_last_checkpoint

WEIGHTS = ("adapter_model.safetensors", "model.safetensors")


class CorruptCheckpointError(RuntimeError):
    """A checkpoint that cannot be resumed from."""


def last_checkpoint(run_dir: Path) -> Path | None:
    """The newest ``checkpoint-<step>`` folder of ``run_dir`` (None when there is none)."""
    if not run_dir.is_dir():
        return None
    found = get_last_checkpoint(str(run_dir))
    return Path(found) if found else None


def check_checkpoint(folder: Path) -> None:
    """Raise :class:`CorruptCheckpointError` unless ``folder``'s trainer state and weights
    read back."""
    state = folder / "trainer_state.json"
    try:
        json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptCheckpointError(
            f"checkpoint {folder}: {state.name} unreadable: {exc}"
        ) from None
    weights = [folder / name for name in WEIGHTS if (folder / name).exists()]
    if not weights:
        raise CorruptCheckpointError(f"checkpoint {folder}: no weights ({' or '.join(WEIGHTS)})")
    for path in weights:
        try:
            with safe_open(str(path), framework="pt") as handle:
                for key in handle.keys():  # noqa: SIM118 (safe_open is not iterable)
                    handle.get_tensor(key)
        except (OSError, SafetensorError, ValueError) as exc:
            raise CorruptCheckpointError(
                f"checkpoint {folder}: {path.name} is corrupt ({exc}); delete the folder to "
                "resume from the one before it, or start again"
            ) from None
