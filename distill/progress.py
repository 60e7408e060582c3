"""Progress of a training run: each logged step to ``metrics.jsonl`` and the log, with ETA."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from distill.heap import resident_mb

log = logging.getLogger("distill.train")


StepHook = Callable[[dict[str, Any]], None]
"""Called with each step's row (a job reports its progress, and may raise to stop)."""


class ProgressCallback(TrainerCallback):
    """Appends one JSON line per log event (step, loss, learning rate, epoch, elapsed, ETA,
    resident memory)
    and hands each step's row to ``on_step``."""

    def __init__(
        self, path: Path, *, dropped_over_length: int = 0, on_step: StepHook | None = None
    ) -> None:
        self.path = path
        self.dropped = dropped_over_length
        self.on_step = on_step
        self._started = 0.0
        self._first_step = 0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._started = time.perf_counter()
        self._first_step = state.global_step
        self._write(
            {
                "event": "start",
                "max_steps": state.max_steps,
                "resumed_at_step": state.global_step,
                "dropped_over_length": self.dropped,
            }
        )

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
        logs = dict(logs or {})
        if "loss" not in logs:
            return
        elapsed = time.perf_counter() - self._started
        done = state.global_step - self._first_step
        left = max(0, state.max_steps - state.global_step)
        eta = elapsed / done * left if done else None
        row = {
            "event": "step",
            "step": state.global_step,
            "max_steps": state.max_steps,
            "epoch": round(state.epoch or 0.0, 4),
            "loss": logs["loss"],
            "learning_rate": logs.get("learning_rate"),
            "elapsed_s": round(elapsed, 2),
            "eta_s": None if eta is None else round(eta, 1),
            "rss_mb": resident_mb(),
        }
        self._write(row)
        eta_text = "?" if eta is None else f"{eta:.0f}s"
        log.info(
            "step %d/%d loss %.4f eta %s",
            state.global_step,
            state.max_steps,
            logs["loss"],
            eta_text,
        )
        if self.on_step is not None:
            self.on_step(row)

    def _write(self, row: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row, default=str) + "\n")
