"""Out-of-sample confidence for the report: no answer is predicted by a calibrator fitted on
an answer to the same question, even one from another set (a greedy run and a vote over the
same sample share their questions)."""

from __future__ import annotations

from dataclasses import dataclass

from bench import calibration_folds
from bench.calibration_folds import cross_fitted, leave_one_out


@dataclass
class Answer:
    id: str
    features: dict[str, float]
    correct: bool


def _set(prefix: str, ids: range) -> list[Answer]:
    return [Answer(f"{prefix}{i}", {"x": float(i % 7)}, i % 3 != 0) for i in ids]


def _sets() -> dict[str, list[Answer]]:
    greedy = _set("spider-", range(40))
    vote = _set("spider-", range(40))  # the same questions answered again
    other = _set("geo-", range(30))
    return {"greedy": greedy, "vote": vote, "geo": other}


def _record_fits(monkeypatch, sets: dict[str, list[Answer]]) -> list[list[str]]:
    """The question ids each calibrator is fitted on, in order (the fits are the real ones)."""
    fits: list[list[str]] = []
    real = calibration_folds.fit_calibrator
    by_features = {id(a.features): a.id for found in sets.values() for a in found}

    def recording(features, labels, **options):
        fits.append([by_features[id(f)] for f in features])
        return real(features, labels, **options)

    monkeypatch.setattr(calibration_folds, "fit_calibrator", recording)
    return fits


def test_cross_fitting_never_fits_on_the_held_questions_from_any_set(monkeypatch):
    sets = _sets()
    fits = _record_fits(monkeypatch, sets)
    predicted = cross_fitted(sets, folds=5)
    assert {name: len(p) for name, p in predicted.items()} == {"greedy": 40, "vote": 40, "geo": 30}
    assert len(fits) == 15
    held_out: list[str] = []
    for fit in fits[:5]:  # the greedy set's folds: the vote's answers to them left out too
        trained = set(fit)
        held = {a.id for a in sets["greedy"]} - trained
        assert held and len(fit) == 2 * (40 - len(held)) + 30  # its other folds, the vote's, geo
        held_out += held
    assert sorted(held_out) == sorted(a.id for a in sets["greedy"])  # each question held once


def test_leave_one_out_fits_a_set_without_the_other_sets_answers_to_its_questions(monkeypatch):
    sets = _sets()
    fits = _record_fits(monkeypatch, sets)
    leave_one_out(sets)
    greedy_fit, vote_fit, geo_fit = fits
    assert all(i.startswith("geo-") for i in greedy_fit + vote_fit) and len(greedy_fit) == 30
    assert len(geo_fit) == 80
