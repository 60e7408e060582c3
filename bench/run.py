"""The benchmark runner: resumable, parallel, with per-question timeouts and a streaming mode.

Each question is answered by a :class:`~bench.systems.System`, the predicted SQL and every gold
variant run read-only on the question's database, and the prediction is scored against the
best-matching gold variant (EX, Spider match, soft-F1, Bipartite F-β). One JSON line per
question is appended to ``results.jsonl`` as soon as it is scored, so an interrupted run
resumes where it stopped. A question whose canonical gold SQL fails is reported and left out
of the scores; other failing variants are ignored.

The per-question timeout cannot stop a predict that has started: predicts run in threads, and
an in-process model (llama.cpp) cannot be interrupted. A predict still running at the timeout
fails its question (``timed out``; a later answer is discarded), and the runner waits for it to
end before that worker's next question: systems share one model, so the next predict could not
start sooner, and its own clock would run while it waited. The result records the timeout it
ran past, and ``latency_s`` how long it really ran (the overrun is the difference).

Streaming mode (lifelong learning) answers questions one at a time in dataset order; after each
one a learning system is told the outcome, with the gold SQL revealed (``labeled``) or not
(``unlabeled``), and the report plots accuracy against questions seen. With ``mine_every``
a :class:`MiningSystem` also mines every N questions seen (after the question's observe);
each round is a line of ``mining.jsonl``, and its time is charged to no question's latency.
A resumed stream first replays what its answered questions taught (``Runner._replay_stream``).
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field
from tqdm import tqdm

from bench.datasets import Dataset, Example
from bench.metrics import score_all
from bench.metrics.normalize import Result
from bench.systems import LearningSystem, Prediction, System
from kb.target.database import Database

log = logging.getLogger(__name__)
StreamMode = Literal["labeled", "unlabeled"]
METRICS = ("ex", "spider_ex", "soft_f1", "bf_beta")
MINING_LOG = "mining.jsonl"
LEARNED = "learned"  # run.json: what the learn split taught (note_learned)
COMMITS = "commits"  # run.json: the commits the run's answers were recorded at


class MiningRecord(Protocol):
    """One mining round as a system reports it."""

    def to_dict(self) -> dict[str, Any]: ...


@runtime_checkable
class MiningSystem(Protocol):
    """A learning system that mines what it observed when asked (``--mine-every``)."""

    def mine(self, *, phase: str = "stream", after_question: int = 0) -> MiningRecord | None: ...


def record_mining(
    out_dir: Path, record: MiningRecord | None, extra: dict[str, Any] | None = None
) -> None:
    """Append a mining round to ``mining.jsonl`` in ``out_dir`` (None: nothing was mined),
    with ``extra`` keys beside the round's own (e.g. what ``--learn-split`` revealed)."""
    if record is None:
        return
    with (out_dir / MINING_LOG).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**record.to_dict(), **(extra or {})}, sort_keys=True) + "\n")


def load_mining(out_dir: Path) -> list[dict[str, Any]]:
    """The mining rounds recorded in ``out_dir`` (none when it did not mine)."""
    path = out_dir / MINING_LOG
    if not path.exists():
        return []
    rounds = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rounds.append(json.loads(line))
        except ValueError:
            log.warning("%s: unreadable mining round skipped", path)
    return rounds


class QuestionResult(BaseModel):
    """Everything recorded about one question (one line of ``results.jsonl``)."""

    id: str
    position: int
    question: str
    database: str
    difficulty: str | None = None
    tags: list[str] = Field(default_factory=list)
    order_relevant: bool = False
    predicted_sql: str | None = None
    gold_sql: str | None = None
    prediction_error: str | None = None
    execution_error: str | None = None
    gold_error: str | None = None
    scores: dict[str, float] | None = None
    alternative_scores: dict[str, dict[str, float]] = Field(default_factory=dict)
    latency_s: float = 0.0  # how long the predict ran, past a timeout too
    timed_out_after_s: float | None = None  # the timeout the predict ran past; None: in time
    execution_s: float = 0.0
    system_metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.scores is not None

    @property
    def overrun_s(self) -> float:
        """Seconds the predict ran on past its timeout (0 when it finished in time)."""
        if self.timed_out_after_s is None:
            return 0.0
        return max(0.0, self.latency_s - self.timed_out_after_s)


@dataclass
class RunConfig:
    out_dir: Path
    workers: int = 1
    timeout_s: float = 120.0  # fails a question; cannot stop its predict (see the module doc)
    sql_timeout_s: float = 30.0
    max_rows: int = 100_000
    stream: StreamMode | None = None
    mine_every: int = 0  # stream: a mining round every N questions seen (0: none)


class DatabasePool:
    """One :class:`Database` per URL, created on first use (thread-safe)."""

    def __init__(self, *, timeout_s: float, max_rows: int) -> None:
        self._timeout_s, self._max_rows = timeout_s, max_rows
        self._open: dict[str, Database] = {}
        self._lock = threading.Lock()

    def get(self, url: str) -> Database:
        with self._lock:
            if url not in self._open:
                self._open[url] = Database(url, timeout_s=self._timeout_s, max_rows=self._max_rows)
            return self._open[url]


class Runner:
    """Runs ``system`` over ``dataset`` and writes ``results.jsonl`` into ``config.out_dir``."""

    def __init__(self, dataset: Dataset, system: System, config: RunConfig) -> None:
        self.dataset, self.system, self.config = dataset, system, config
        self.results_path = config.out_dir / "results.jsonl"
        self._databases = DatabasePool(timeout_s=config.sql_timeout_s, max_rows=config.max_rows)
        self._write_lock = threading.Lock()
        self._predictor = ThreadPoolExecutor(max(2, config.workers * 2), "predict")

    def run(self) -> list[QuestionResult]:
        """Answer every question not answered yet; return all results in dataset order."""
        self.config.out_dir.mkdir(parents=True, exist_ok=True)
        done = {r.id: r for r in load_results(self.results_path)}
        todo = [(i, ex) for i, ex in enumerate(self.dataset) if ex.id not in done]
        if done:
            log.info("resuming: %d of %d questions already answered", len(done), len(self.dataset))
            if self.config.stream is not None and isinstance(self.system, LearningSystem):
                self._replay_stream(done)
        progress = tqdm(total=len(todo), desc=f"{self.system.name} on {self.dataset.name}")
        try:
            for result in self._evaluate_all(todo):
                done[result.id] = result
                progress.update(1)
        finally:
            progress.close()
            self._predictor.shutdown(wait=False, cancel_futures=True)
        return sorted(done.values(), key=lambda r: r.position)

    def _evaluate_all(self, todo: list[tuple[int, Example]]) -> Iterator[QuestionResult]:
        if self.config.stream is not None or self.config.workers <= 1:
            for position, example in todo:
                yield self._record(self._evaluate(position, example))
            return
        with ThreadPoolExecutor(self.config.workers, "question") as pool:
            futures = [pool.submit(self._evaluate, pos, ex) for pos, ex in todo]
            for future in futures:
                yield self._record(future.result())

    def _record(self, result: QuestionResult) -> QuestionResult:
        with self._write_lock, self.results_path.open("a", encoding="utf-8") as handle:
            handle.write(result.model_dump_json() + "\n")
        return result

    def _evaluate(self, position: int, example: Example) -> QuestionResult:
        url = self._database_url(example)
        result = QuestionResult(
            id=example.id,
            position=position,
            question=example.question,
            database=example.database,
            difficulty=example.difficulty,
            tags=example.tags,
            order_relevant=example.order_relevant,
        )
        if url is None:
            result.gold_error = f"no database URL for {example.database!r}"
            return result
        database = self._databases.get(url)
        prediction = self._predict(example, database.dialect, result)
        self._score(example, database, prediction, result)
        if self.config.stream is not None and isinstance(self.system, LearningSystem):
            self.system.observe(example, prediction, self.config.stream == "labeled")
            self._mine_if_due(position + 1)
        return result

    def _database_url(self, example: Example) -> str | None:
        return example.database_url or self.dataset.databases.get(example.database)

    def _replay_stream(self, done: dict[str, QuestionResult]) -> None:
        """A resumed stream run's system starts with a new store: what the answered questions
        taught it is stored again in stream order (each question logged with the SQL it was
        answered with, then observed, gold revealed or not) and the mining rounds due among
        them run again (not recorded twice), so the rest of the stream learns from all of it.
        The answers are read from ``results.jsonl``; no question is asked again."""
        examples = {example.id: example for example in self.dataset}
        labeled = self.config.stream == "labeled"
        replay = getattr(self.system, "replay", None)
        answered = sorted(done.values(), key=lambda r: r.position)
        for result in tqdm(answered, desc="replaying the answered stream", unit="question"):
            example = examples.get(result.id)
            if example is None or self._database_url(example) is None:
                continue  # never observed (see _evaluate)
            if callable(replay):
                replay(example, result.predicted_sql, labeled)
            else:
                self.system.observe(example, Prediction(sql=result.predicted_sql), labeled)
            self._mine_if_due(result.position + 1, record=False)

    def _mine_if_due(self, seen: int, *, record: bool = True) -> None:
        """A mining round after every ``mine_every`` questions seen (outside any latency)."""
        every = self.config.mine_every
        if every > 0 and seen % every == 0 and isinstance(self.system, MiningSystem):
            mined = self.system.mine(after_question=seen)
            if record:
                record_mining(self.config.out_dir, mined)

    def _predict(self, example: Example, dialect: str, result: QuestionResult) -> Prediction:
        timeout = self.config.timeout_s
        start = time.perf_counter()
        future: Future[Prediction] = self._predictor.submit(self.system.predict, example, dialect)
        try:
            prediction = future.result(timeout=timeout)
        except FutureTimeout:
            # a started predict cannot be stopped: fail the question, wait for the predict to end
            log.warning(
                "%s: predict past the %g s timeout; waiting for it to end", example.id, timeout
            )
            wait([future])
            log.warning(
                "%s: predict ended %.1f s past its timeout",
                example.id,
                time.perf_counter() - start - timeout,
            )
            result.timed_out_after_s = timeout
            prediction = Prediction(error=f"timed out after {timeout:g} s")
        except Exception as exc:  # a failing system must not stop the run
            log.exception("system %s failed on %s", self.system.name, example.id)
            prediction = Prediction(error=f"{type(exc).__name__}: {exc}")
        result.latency_s = time.perf_counter() - start
        result.predicted_sql, result.prediction_error = prediction.sql, prediction.error
        result.system_metadata = prediction.metadata
        return prediction

    def _score(
        self, example: Example, database: Database, prediction: Prediction, result: QuestionResult
    ) -> None:
        golds = []
        for sql in example.gold_for(database.dialect):
            outcome = database.execute(sql)
            if outcome.ok and not outcome.truncated:
                golds.append((sql, outcome.rows))
            elif not golds:  # the canonical gold fails: the question cannot be scored
                result.gold_error = outcome.error or f"gold result over {self.config.max_rows} rows"
                return
        start = time.perf_counter()
        predicted = database.execute(prediction.sql) if prediction.sql else None
        result.execution_s = time.perf_counter() - start
        if predicted is not None and not predicted.ok:
            result.execution_error = predicted.error
        rows = predicted.rows if predicted is not None and predicted.ok else None
        result.gold_sql, result.scores = best_gold(rows, golds, example.order_relevant)
        for name, sql in prediction.alternatives.items():
            other = database.execute(sql)
            other_rows = other.rows if other.ok else None
            result.alternative_scores[name] = best_gold(other_rows, golds, example.order_relevant)[
                1
            ]


def best_gold(
    rows: Result | None,
    golds: list[tuple[str, Result]],
    order_relevant: bool,
) -> tuple[str, dict[str, float]]:
    """The gold SQL that ``rows`` (None: the prediction failed) score best against, and the
    scores; ``golds`` holds each gold SQL with its rows, canonical first."""
    best: tuple[tuple[float, ...], str, dict[str, float]] | None = None
    for sql, gold_rows in golds:
        scores = (
            score_all(rows, gold_rows, order_relevant)
            if rows is not None
            else dict.fromkeys(METRICS, 0.0)
        )
        key = tuple(scores[m] for m in METRICS)
        if best is None or key > best[0]:
            best = (key, sql, scores)
    assert best is not None
    return best[1], best[2]


def run_results(folder: Path) -> list[QuestionResult]:
    """A recorded run's results (:func:`load_results` of its ``results.jsonl``)."""
    if not (folder / "results.jsonl").is_file():
        raise FileNotFoundError(f"no results.jsonl in {folder}")
    return load_results(folder / "results.jsonl")


def load_results(path: Path) -> list[QuestionResult]:
    """Results already written (a torn last line from a crash is ignored)."""
    if not path.exists():
        return []
    results = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            results.append(QuestionResult.model_validate_json(line))
        except ValueError:
            log.warning("%s, line %d: unreadable result skipped (will be re-run)", path, number)
    return results


def write_run_manifest(out_dir: Path, manifest: dict[str, Any], *, fresh: bool) -> None:
    """Record what a run is; refuse to resume a different run in the same folder (what
    :func:`note_learned` added after the run started is not part of what it is)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "run.json"
    commits: list[str] = []
    if fresh:
        for name in ("results.jsonl", "run.json", MINING_LOG):
            (out_dir / name).unlink(missing_ok=True)
    elif path.exists():
        previous = json.loads(path.read_text())
        previous.pop(LEARNED, None)
        commits = previous.pop(COMMITS, [])
        if previous != manifest:
            raise ValueError(
                f"{out_dir} holds another run ({previous}); use --fresh or another --out"
            )
    commits = with_source_commit(commits)  # a run resumed at a later commit says so
    path.write_text(json.dumps({**manifest, COMMITS: commits}, indent=2, sort_keys=True) + "\n")


def with_source_commit(commits: list[str]) -> list[str]:
    """``commits`` with the code's own commit (:func:`source_commit`) after them, unless it
    is among them already or unknown."""
    current = source_commit()
    return [*commits, current] if current is not None and current not in commits else commits


def source_commit() -> str | None:
    """The commit of the checkout this code runs from (``-dirty`` when it has uncommitted
    changes to tracked files), or None outside a git checkout."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=10
        )
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head or None


def note_learned(out_dir: Path, learned: dict[str, Any]) -> None:
    """Add what the system learned before the questions (``--learn-split``: what was
    revealed, how many the vote kept) to the run's manifest, under ``learned``; a resumed run
    learns again and writes it anew."""
    path = out_dir / "run.json"
    manifest = json.loads(path.read_text())
    manifest[LEARNED] = learned
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
