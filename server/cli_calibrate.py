"""``almanac kb calibrate``: refit the answers' confidence calibrator on verified answers.

almanac kb calibrate [--database NAME] [--dry-run] [--json]
    Every logged answer with confidence signals and a verdict (feedback: correct or wrong)
    is a training example; a calibrator fitted on them (logistic regression, isotonic on top
    when it helps; :mod:`agents.confidence.calibrator`) replaces the one in use at
    ``ALMANAC_CONFIDENCE__CALIBRATOR_PATH`` (default ``<data_dir>/calibrator.json``), with
    its version one more. The recorded bench answers the packaged calibrator was fitted on
    are fitted on beside them (``ALMANAC_CONFIDENCE__REFIT_WITH_PACKAGED``). With too few
    verified answers nothing is written and the report says how many are needed.
    ``--dry-run`` fits and reports without writing.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from server.settings import Settings

CALIBRATE_ACTION = "calibrate"


def add_calibrate_command(kb_actions: Any) -> None:
    """Register ``calibrate`` under ``almanac kb``."""
    command = kb_actions.add_parser(
        CALIBRATE_ACTION, help="refit the confidence calibrator on the verified answers"
    )
    command.add_argument("--database", help="only this database's answers; default all")
    command.add_argument("--dry-run", action="store_true", help="fit and report, write nothing")
    command.add_argument("--json", action="store_true", help="print the JSON report")


def run_calibrate_command(args: argparse.Namespace, settings: Settings) -> int:
    from agents.confidence.assess import describe
    from agents.confidence.refit import refit_calibrator
    from kb.store import KnowledgeStore
    from server.confidence import calibrator_path, calibrator_source, refit_packaged_answers

    current = calibrator_source(settings).current()
    with KnowledgeStore(settings.resolved_store_url) as store:
        report = refit_calibrator(
            store,
            calibrator_path(settings),
            current,
            database=args.database,
            dry_run=args.dry_run,
            packaged=refit_packaged_answers(settings),
        )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(f"in use before: {describe(current)}")
        print(report.summary())
    return 0
