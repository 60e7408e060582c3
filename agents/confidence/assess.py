"""An answer's calibrated confidence, from its signals, and whether it abstains.

:class:`ConfidenceAssessor` is what the pipeline holds: the database's vocabulary (for the
coverage and period signals), where the current calibrator comes from
(:class:`CalibratorSource`) and the options (:class:`ConfidenceOptions`: the abstention
threshold, the adaptive-sampling target and budget). ``assess`` computes the signals of the
answer a vote chose and maps them to P(correct).

:class:`CalibratorSource` reads the deployment's calibrator file (written by the
``calibrate`` job) and reloads it when the file changes; until one exists, or when it cannot
be read, it falls back to the calibrator fitted on the bench datasets that ships with
Almanac (``default_calibrator.json`` next to this module), and without that to the hand-set
prior (:mod:`agents.confidence.prior`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.answer import Candidate
from agents.confidence.calibrator import Calibrator, CalibratorLoadError, prior_calibrator
from agents.confidence.signals import AnswerSignals, answer_signals
from agents.confidence.vocabulary import DatabaseVocabulary
from agents.rag.agent import RagContext
from agents.sql.vote import VoteOutcome, vote
from kb.store import KnowledgeStore

log = logging.getLogger(__name__)
DEFAULT_CALIBRATOR = Path(__file__).with_name("default_calibrator.json")


@dataclass
class ConfidenceOptions:
    """How confidence is used.

    Attributes:
        abstain_below: an answer whose confidence is under this abstains (0: never).
        withhold_rows: an abstaining answer returns its SQL but not its rows (its
            ``withheld_rows`` says how many there were).
        target: adaptive sampling stops once the best answer's confidence reaches this
            (0.1: the vote's EX at under half its latency, on Spider, GeoQuery and AutoFin).
        escalation_target: a cascade's tier before the last answers only once its answer
            reaches this (and two of its samples agree); under it the next tier is asked.
        max_samples: adaptive sampling's budget of samples per tier.
        adaptive: questions that do not fix ``n`` sample adaptively.
        suggestions: nearest answerable questions offered by an abstention.
    """

    abstain_below: float = 0.3
    withhold_rows: bool = True
    target: float = 0.1
    escalation_target: float = 0.5
    max_samples: int = 5
    adaptive: bool = False
    suggestions: int = 3

    def __post_init__(self) -> None:
        for name in ("abstain_below", "target", "escalation_target"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if not 1 <= self.max_samples <= 16:
            raise ValueError(f"max_samples must be between 1 and 16, got {self.max_samples}")


class CalibratorSource:
    """The current calibrator: the deployment's file when there is one, else ``fallback``.

    Args:
        path: the deployment's calibrator file (None: none).
        fallback: used while the file is missing or unreadable (default: the packaged
            bench-fitted calibrator, else the prior).
    """

    def __init__(self, path: Path | None = None, fallback: Calibrator | None = None) -> None:
        self.path = path
        self.fallback = fallback or packaged_calibrator()
        self._loaded: tuple[float, Calibrator] | None = None
        self._lock = threading.Lock()

    def current(self) -> Calibrator:
        if self.path is None:
            return self.fallback
        with self._lock:
            try:
                stamp = self.path.stat().st_mtime
            except OSError:
                return self.fallback
            if self._loaded is None or self._loaded[0] != stamp:
                try:
                    self._loaded = (stamp, Calibrator.load(self.path))
                except CalibratorLoadError as exc:
                    log.warning("%s; using %s", exc, describe(self.fallback))
                    return self.fallback
            return self._loaded[1]


def packaged_calibrator() -> Calibrator:
    """The calibrator fitted on the bench datasets that ships with Almanac, else the prior."""
    if DEFAULT_CALIBRATOR.exists():
        try:
            return Calibrator.load(DEFAULT_CALIBRATOR)
        except CalibratorLoadError as exc:
            log.warning("%s; using the prior", exc)
    return prior_calibrator()


def describe(calibrator: Calibrator) -> str:
    """One line naming a calibrator: ``logistic v3 (deployment, 412 answers)``."""
    fitted = calibrator.fitted_on
    data = f"{fitted.examples} answers" if fitted.examples else "no data"
    return f"{calibrator.method} v{calibrator.version} ({calibrator.source}, {data})"


@dataclass
class Assessment:
    """The confidence of the answer a vote chose: P(correct), its signals, the calibrator."""

    confidence: float
    signals: AnswerSignals
    vote: VoteOutcome
    calibrator: str


class ConfidenceAssessor:
    """Assesses the answers of one database (see the module docstring)."""

    def __init__(
        self,
        store: KnowledgeStore,
        database: str,
        *,
        dialect: str = "sqlite",
        calibrators: CalibratorSource | None = None,
        options: ConfidenceOptions | None = None,
    ) -> None:
        self.vocabulary = DatabaseVocabulary(store, database)
        self.dialect = dialect
        self.calibrators = calibrators or CalibratorSource()
        self.options = options or ConfidenceOptions()

    def assess(
        self,
        rag: RagContext,
        candidates: Sequence[Candidate],
        outcome: VoteOutcome | None = None,
        *,
        plain_fallback: bool = False,
        tiers_tried: int = 1,
    ) -> Assessment:
        """The confidence of the answer ``outcome`` chose among ``candidates`` (voted here
        when not given)."""
        outcome = outcome or vote(candidates, dialect=self.dialect)
        signals = answer_signals(
            rag.question,
            rag,
            candidates,
            outcome,
            self.vocabulary.snapshot(),
            dialect=self.dialect,
            plain_fallback=plain_fallback,
            tiers_tried=tiers_tried,
        )
        calibrator = self.calibrators.current()
        confidence = calibrator.predict(signals.features)
        return Assessment(round(confidence, 4), signals, outcome, describe(calibrator))
