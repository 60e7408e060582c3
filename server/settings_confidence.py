"""The ``[confidence]`` settings (``ALMANAC_CONFIDENCE__<NAME>``): calibrated confidence,
abstention and adaptive sampling (:mod:`agents.confidence`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class ConfidenceSettings(BaseModel):
    """How answers are assessed (``ALMANAC_CONFIDENCE__<NAME>``)."""

    model_config = ConfigDict(extra="forbid")

    abstain_below: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="an answer whose calibrated confidence is under this abstains: it says why, "
        "offers nearby answerable questions or asks which meaning was meant (0: never)",
    )
    withhold_rows: bool = Field(
        default=True, description="an abstaining answer keeps its SQL but withholds its rows"
    )
    adaptive: bool = Field(
        default=True,
        description="questions that do not set n draw the greedy answer, then more samples only "
        "while the confidence is under target (the cascade's tiers too)",
    )
    target: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="adaptive sampling stops at this confidence (0.1: the vote's EX at under "
        "half its latency on the bench sets)",
    )
    escalation_target: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="a cascade's tier before the last answers only at this confidence (and two "
        "of its samples agreeing); under it the next tier is asked",
    )
    max_samples: int = Field(
        default=5, ge=1, le=16, description="adaptive sampling's budget of samples per tier"
    )
    suggestions: int = Field(
        default=3, ge=0, le=10, description="nearby answerable questions an abstention offers"
    )
    calibrator_path: Path | None = Field(
        default=None,
        description="the deployment's calibrator (written by the calibrate job); default "
        "<data_dir>/calibrator.json; until it exists the packaged one fitted on the bench "
        "datasets is used",
    )
    refit_with_packaged: bool = Field(
        default=True,
        description="a calibrate job fits on the deployment's verified answers together with "
        "the recorded bench answers the packaged calibrator was fitted on (false: the "
        "deployment's alone)",
    )
    refit_every: int = Field(
        default=25,
        ge=0,
        description="feedback that brings this many new verified answers since the last fit "
        "queues a calibrate job (0: never automatically)",
    )
