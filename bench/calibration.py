"""How good the answers' confidence is: AUROC, calibration error, abstention, adaptive n.

Two steps. ``bench run --system almanac`` (or ``almanac-tts``, ``almanac-adaptive``) records
each answer's confidence signals in ``results.jsonl`` beside whether it was right; the
unanswerable set (``bench/datasets/unanswerable.jsonl``) is asked with ``ask-unanswerable``,
which records the same signals (every answer to those is wrong). ``report`` then reads the
runs and prints, per set:

- the confidence the runs recorded (the calibrator they ran with): AUROC and ECE;
- a calibrator fitted on the *other* sets (leave one set out: what the packaged calibrator
  is to a new deployment), and one fitted by 5-fold cross-fitting, each fold predicted by a
  calibrator fitted on the other sets and the set's other folds (a deployment that has
  verified some of its own answers): AUROC, ECE, Brier;
- abstention at each threshold: the share of unanswerable questions abstained on against
  the share of correctly answered questions abstained on (the cost), by the other-sets
  calibrator, the pooled one, or (``--abstain-fit recorded``) the confidence the answers
  carried: on runs the packaged calibrator never saw (``--exclude-stratified``, the held-out
  unanswerable set), what a new deployment would abstain on;
- with ``--calibrator FILE``: that calibrator's AUROC and ECE on every set (a candidate
  default measured on runs it never saw, which recorded the current default's confidence);
  ``--abstain-fit given`` abstains by it;
- with ``--adaptive RUN --fixed RUN``: EX and mean latency of adaptive sampling against a
  fixed vote on the same questions.

``export`` writes a run's answers (signals, scores, confidence, cost; no question text) to a
gzipped recording (:mod:`bench.recordings`; the packaged calibrator's lie in
``agents/confidence/recordings/``), which ``report`` reads
in place of the folder: the answers a packaged calibrator is fitted on outlive the machine
that recorded them.

``report --write PATH`` fits one calibrator on every set given (the unanswerable set
included) and saves it, one version after the calibrator already there:
``agents/confidence/default_calibrator.json`` is made this way.

    python -m bench.calibration ask-unanswerable --model qwen2.5-coder-1.5b --threads 2 \\
        --autofin bench/out/autofin-data/questions.jsonl --out bench/out/unanswerable
    python -m bench.calibration report spider=bench/out/s300 geo=bench/out/g150 \\
        autofin=bench/out/a60 --unanswerable bench/out/unanswerable
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from agents.confidence.calibrator import Calibrator, CalibratorLoadError, fit_calibrator
from agents.confidence.recorded_answers import PACKAGED_FOLDER, SUFFIX, is_recording
from bench.calibration_tables import UNANSWERABLE, Scored, abstention_table, quality_table
from bench.datasets.example import Example
from bench.datasets.registry import default_data_root, load_dataset
from bench.datasets.unanswerable import load_unanswerable
from bench.recordings import export_run, export_unanswerable, note_commit, read_scored
from bench.run import load_results
from bench.systems import make_system

log = logging.getLogger(__name__)


def read_run(set_name: str, folder: Path, metric: str = "ex") -> list[Scored]:
    """The scored answers of a ``bench run`` folder (questions whose gold failed left out).

    An answer is right when its score under ``metric`` is 1; an answer scored without that
    metric falls back to ``ex`` (Spider's ``spider_ex`` lets the columns come in any order,
    as Spider's own evaluation does; AutoFin and GeoQuery answers have ``ex`` only)."""
    found = []
    for result in load_results(folder / "results.jsonl"):
        if result.scores is None:
            continue
        meta = result.system_metadata
        found.append(
            Scored(
                set_name,
                result.id,
                {k: float(v) for k, v in (meta.get("signals") or {}).items()},
                result.scores.get(metric, result.scores.get("ex", 0.0)) >= 1.0,
                meta.get("confidence"),
                result.latency_s,
            )
        )
    return found


def read_set(name: str, where: Path, metric: str = "ex") -> list[Scored]:
    """A set's answers from a run folder, an ask-unanswerable folder or a recording
    (:mod:`bench.recordings`), named ``name`` (the unanswerable set keeps its own name)."""
    if is_recording(where):
        return read_scored(where, name, metric)
    if name == UNANSWERABLE:
        return read_unanswerable(where)
    return read_run(name, where, metric)


def read_spec(spec: str, metric: str = "ex") -> tuple[str, Path, list[Scored]]:
    """A ``NAME=FOLDER`` or ``NAME=RECORDING`` argument: the name, the place and its answers."""
    name, _, where = spec.partition("=")
    if not where:
        raise ValueError(f"a run is NAME=FOLDER or NAME=RECORDING{SUFFIX}, got {spec!r}")
    return name, Path(where), read_set(name, Path(where), metric)


def read_unanswerable(folder: Path) -> list[Scored]:
    """The answers to the unanswerable set (all wrong by definition)."""
    found = []
    for line in (folder / "unanswerable.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            meta = row.get("metadata") or {}
            signals = {k: float(v) for k, v in (meta.get("signals") or {}).items()}
            found.append(
                Scored(
                    UNANSWERABLE,
                    row["id"],
                    signals,
                    False,
                    meta.get("confidence"),
                    row.get("seconds", 0.0),
                )
            )
    return found


# --------------------------------------------------------------------------- ask
def ask_unanswerable(args: argparse.Namespace) -> int:
    """Ask every unanswerable question with an almanac system; one line per question."""
    questions = load_unanswerable(args.questions)
    autofin = _autofin_example(args.autofin) if args.autofin else None
    if autofin is None:
        questions = [q for q in questions if q.database != "autofin"]
    if args.limit is not None:
        questions = balanced(questions, args.limit)
    spider = default_data_root() / "spider_dev" / "database"
    options = {
        "model": args.model,
        "threads": args.threads,
        "llm_cache": args.llm_cache,
        "prompt_cache": args.prompt_cache,
        "sequences": args.sequences,
        "adaptive_target": args.adaptive_target,
    }
    if args.calibrator:
        options["calibrator"] = args.calibrator
    system = make_system(args.system, **{k: v for k, v in options.items() if v is not None})
    args.out.mkdir(parents=True, exist_ok=True)
    note_commit(args.out)
    path = args.out / "unanswerable.jsonl"
    done = set()
    if path.exists():
        done = {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}
    with path.open("a", encoding="utf-8") as out:
        for item in tqdm(questions, desc="unanswerable", unit="q"):
            if item.id in done:
                continue
            if item.database == "autofin":
                assert autofin is not None
                url, context = autofin.database_url, autofin.context
            else:
                url = f"sqlite:///{spider / item.database / f'{item.database}.sqlite'}"
                context = None
            example = Example(
                id=item.id,
                question=item.question,
                database=autofin.database
                if item.database == "autofin" and autofin
                else item.database,
                database_url=url,
                gold_sql=["SELECT 1"],  # never run: nothing answers these questions
                **({"context": context} if context is not None else {}),
            )
            prediction = system.predict(example, "sqlite")
            row = {
                "id": item.id,
                "database": item.database,
                "category": item.category,
                "question": item.question,
                "sql": prediction.sql,
                "error": prediction.error,
                "seconds": prediction.metadata.get("seconds", 0.0),
                "metadata": prediction.metadata,
            }
            out.write(json.dumps(row) + "\n")
            out.flush()
    print(f"asked {len(questions)} unanswerable questions: {path}")
    return 0


def balanced(questions: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` questions taken in turn from each (Spider or AutoFin, category)
    group, in file order within a group: every kind stays represented."""
    groups: dict[tuple[bool, str], list[Any]] = {}
    for question in questions:
        groups.setdefault((question.database == "autofin", question.category), []).append(question)
    chosen: list[Any] = []
    while len(chosen) < limit and any(groups.values()):
        for group in groups.values():
            if group and len(chosen) < limit:
                chosen.append(group.pop(0))
    return chosen


def _autofin_example(path: Path) -> Example:
    dataset = load_dataset(str(path))
    if not dataset.examples:
        raise ValueError(f"no AutoFin questions in {path}")
    return dataset.examples[0]


# --------------------------------------------------------------------------- export
def export(args: argparse.Namespace) -> int:
    """Write a run's (or the unanswerable set's) answers to a recording."""
    command = args.command_line or ""
    if args.run:
        if not args.set:
            raise ValueError("export --run needs --set NAME (the set's name in reports)")
        count = export_run(args.run, args.set, args.out, commits=args.commit, command=command)
    else:
        count = export_unanswerable(
            args.unanswerable,
            args.out,
            commits=args.commit,
            command=command,
            set_name=args.set or UNANSWERABLE,
        )
    print(f"recorded {count} answers: {args.out}")
    return 0


# --------------------------------------------------------------------------- report
def report(args: argparse.Namespace) -> int:
    sets: dict[str, list[Scored]] = {}
    places: list[Path] = []
    for spec in args.runs:
        name, where, sets[name] = read_spec(spec, args.correct)
        places.append(where)
    if args.unanswerable:
        sets[UNANSWERABLE] = read_set(UNANSWERABLE, args.unanswerable, args.correct)
        places.append(args.unanswerable)
    given = Calibrator.load(args.calibrator) if args.calibrator else None
    lines = [quality_table(sets, given), "", abstention_table(sets, args.abstain_fit, given)]
    if args.adaptive and args.fixed:
        lines += ["", _adaptive_line(args.adaptive, args.fixed)]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.write:
        everything = [s for found in sets.values() for s in found]
        fitted = fit_calibrator(
            [s.features for s in everything],
            [s.correct for s in everything],
            previous=_previous(args.write),
            source="bench:" + "+".join(sorted(sets)),
        )
        fitted.recordings = packaged_names(places)
        fitted.save(args.write)
        print(f"calibrator {fitted.method} v{fitted.version} on {len(everything)}: {args.write}")
        if not fitted.recordings:
            print("  (not every set is a recording in agents/confidence/recordings: a refit will")
            print("   fit on the deployment's answers alone)")
    return 0


def packaged_names(paths: Sequence[Path]) -> list[str]:
    """The file names of the report's sets when every one is a packaged recording (what a
    calibrator written from them lists, and a deployment's refit fits on), else none."""
    inside = [p for p in paths if is_recording(p) and p.resolve().parent == PACKAGED_FOLDER]
    return [p.name for p in inside] if paths and len(inside) == len(paths) else []


def _previous(path: Path) -> Calibrator | None:
    """The calibrator already at ``path`` (the refit's version follows it), or None when
    there is none or it cannot be read."""
    if not path.exists():
        return None
    try:
        return Calibrator.load(path)
    except CalibratorLoadError as exc:
        log.warning("%s: the new calibrator starts at version 1", exc)
        return None


def _adaptive_line(adaptive: Path, fixed: Path) -> str:
    a = {s.id: s for s in read_run("adaptive", adaptive)}
    f = {s.id: s for s in read_run("fixed", fixed)}
    common = sorted(set(a) & set(f))
    if not common:
        return "adaptive vs fixed: no question in common"
    ex_a = np.mean([a[i].correct for i in common])
    ex_f = np.mean([f[i].correct for i in common])
    lat_a = np.mean([a[i].seconds for i in common])
    lat_f = np.mean([f[i].seconds for i in common])
    samples = np.mean([a[i].features.get("samples", 1.0) for i in common])
    return (
        f"adaptive vs fixed on {len(common)} questions: EX {ex_a:.3f} vs {ex_f:.3f} "
        f"({100 * (ex_a - ex_f):+.1f} points); mean latency {lat_a:.2f} s vs {lat_f:.2f} s "
        f"({100 * lat_a / lat_f:.0f} %); adaptive drew {samples:.2f} samples on average"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.calibration",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ask = commands.add_parser("ask-unanswerable", help="ask the unanswerable set")
    ask.add_argument("--system", default="almanac")
    ask.add_argument("--questions", type=Path, help="default: bench/datasets/unanswerable.jsonl")
    ask.add_argument("--autofin", type=Path, help="AutoFin questions.jsonl (its database)")
    ask.add_argument("--limit", type=int, help="at most N questions, every kind represented")
    ask.add_argument("--model")
    ask.add_argument("--threads", type=int)
    ask.add_argument("--llm-cache", type=Path)
    ask.add_argument("--prompt-cache", type=Path, help="folder of llama.cpp prompt states")
    ask.add_argument("--sequences", type=int, help="samples decoded together (adaptive systems)")
    ask.add_argument("--adaptive-target", type=float, help="default: the server's 0.1")
    ask.add_argument("--calibrator", type=Path)
    ask.add_argument("--out", type=Path, required=True)
    exp = commands.add_parser(
        "export", help="write answers to a recording (agents/confidence/recordings)"
    )
    source = exp.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", type=Path, help="a `bench run` folder")
    source.add_argument("--unanswerable", type=Path, help="an ask-unanswerable folder")
    exp.add_argument("--set", help="the set's name in reports (required with --run)")
    exp.add_argument(
        "--commit",
        action="append",
        help="a commit the answers were recorded at (repeat; default: the run's run.json)",
    )
    exp.add_argument("--command-line", help="the command that recorded the answers")
    exp.add_argument("--out", type=Path, required=True, help=f"the recording (NAME{SUFFIX})")
    rep = commands.add_parser("report", help="AUROC, ECE, abstention, adaptive n")
    rep.add_argument(
        "runs", nargs="*", help=f"NAME=FOLDER of `bench run` outputs, or NAME=RECORDING{SUFFIX}"
    )
    rep.add_argument(
        "--unanswerable", type=Path, help=f"folder of ask-unanswerable, or its RECORDING{SUFFIX}"
    )
    rep.add_argument(
        "--abstain-fit",
        choices=("other-sets", "pooled", "recorded", "given"),
        default="other-sets",
        help="whose confidence abstains (given: --calibrator's)",
    )
    rep.add_argument(
        "--calibrator",
        type=Path,
        help="also measure this calibrator (a candidate default) on the sets' answers",
    )
    rep.add_argument("--adaptive", type=Path, help="a run of almanac-adaptive")
    rep.add_argument("--fixed", type=Path, help="a run of almanac-tts on the same questions")
    rep.add_argument(
        "--correct",
        default="ex",
        help="the score an answer must reach 1 on to count right (default ex; spider_ex: "
        "Spider's column-order-free match, ex where a run has no such score)",
    )
    rep.add_argument("--write", type=Path, help="fit on every set and save the calibrator here")
    rep.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "ask-unanswerable":
            return ask_unanswerable(args)
        if args.command == "export":
            return export(args)
        return report(args)
    except (KeyError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
