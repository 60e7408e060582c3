"""Almanac configuration: environment variables ``ALMANAC_*`` and an optional TOML file.

Precedence: explicit arguments > environment > TOML file (``ALMANAC_CONFIG`` or
``./almanac.toml``) > defaults. Only ``server/`` reads settings; library code receives objects.

Nested groups (``limits``, ``jobs``) are TOML tables (``[limits]``) or environment variables
with a double underscore (``ALMANAC_LIMITS__MAX_BODY_BYTES``); the LLM tiers are a TOML array
of tables (``[[llm_tiers]]``) or one JSON list in ``ALMANAC_LLM_TIERS``.
docs/configuration.md lists every setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from sqlalchemy.engine import make_url

from agents.llm.models import default_data_dir
from distill.registry import StudentError, check_name
from server.settings_confidence import ConfidenceSettings
from server.settings_retrieval import RetrievalSettings


class LimitSettings(BaseModel):
    """Request limits (``ALMANAC_LIMITS__<NAME>``)."""

    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(default=1_048_576, gt=0, description="request body cap (413)")
    max_import_bytes: int = Field(
        default=64 * 1_048_576, gt=0, description="body cap of POST /v1/knowledge/import (413)"
    )
    max_question_chars: int = Field(default=2_000, gt=0, description="question / query length")
    rate_per_s: float = Field(default=50.0, gt=0, description="requests per second per key")
    rate_burst: int = Field(default=100, gt=0, description="requests a key may send at once")
    request_timeout_s: float = Field(
        default=120.0, gt=0, description="time until the response starts (504 after)"
    )
    llm_concurrency: int = Field(default=1, gt=0, description="LLM-bound requests at once")
    llm_queue: int = Field(default=8, ge=0, description="LLM-bound requests waiting (429 above)")
    llm_queue_wait_s: float = Field(default=30.0, gt=0, description="longest wait (503 after)")
    ask_deadline_s: float | None = Field(
        default=None,
        gt=0,
        description="seconds a question may draw, run and repair SQL; then it answers with what "
        "it has (default and upper bound: the request timeout less 10%, at most 5 s less)",
    )
    sql_concurrency: int = Field(
        default=4, gt=0, description="user-sent SQL (feedback corrections) running at once"
    )
    sql_queue: int = Field(default=32, ge=0, description="user-sent SQL waiting (429 above)")
    sql_per_key: int = Field(
        default=2, gt=0, description="user-sent SQL one key may have running or waiting (429 above)"
    )

    @property
    def answer_deadline_s(self) -> float:
        """The deadline of one question: ``ask_deadline_s``, never past the request timeout
        less a margin (the answer must be out before the 504)."""
        timeout = self.request_timeout_s
        fitting = timeout - min(5.0, timeout / 10)
        return fitting if self.ask_deadline_s is None else min(self.ask_deadline_s, fitting)


class JobSettings(BaseModel):
    """The job worker (``ALMANAC_JOBS__<NAME>``)."""

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(default=1, ge=0, description="worker threads in this process (0: none)")
    poll_s: float = Field(default=1.0, gt=0, description="how often an idle worker looks")
    lease_s: float = Field(
        default=30.0, gt=0, description="a running job without a heartbeat this long is recovered"
    )
    max_attempts: int = Field(
        default=2, ge=1, description="runs of a job whose worker died before it is failed"
    )
    import_dir: Path | None = Field(
        default=None, description="folder of files import jobs may read; default <data_dir>/imports"
    )
    mine_every_minutes: float = Field(
        default=0.0,
        ge=0,
        description="submit a mine job when this many minutes passed since the last one (0: off)",
    )
    mine_every_experiences: int = Field(
        default=0,
        ge=0,
        description="submit a mine job once this many experiences it would mine (see "
        "mine_mode) were written since the last one (0: off)",
    )
    mine_llm_pairer: bool = Field(
        default=False, description="scheduled mine jobs pair leftovers with the describe LLM"
    )
    cot_after_feedback: bool = Field(
        default=True,
        description="feedback that stores a verified experience queues a background cot job "
        "(one at a time) that explains it with the teacher tier",
    )
    mine_gate: bool = Field(
        default=False,
        description="scheduled mine jobs run the regression gate on their new candidates",
    )
    mine_mode: Literal["labeled", "unlabeled", "both"] = Field(
        default="labeled",
        description="what scheduled mine jobs mine (unlabeled: questions only, by the vote)",
    )
    mine_check_s: float = Field(
        default=30.0, gt=0, description="how often the mine schedule is checked"
    )
    mine_vote_samples: int = Field(
        default=5, ge=1, le=16, description="unlabeled mining asks each question this many times"
    )
    mine_vote_min_share: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="unlabeled mining keeps a question whose winning result has this share of "
        "the samples asked for",
    )
    mine_vote_min_confidence: float = Field(
        default=0.8, ge=0, le=1, description="... and whose answer has at least this confidence"
    )
    mine_vote_min_ran: int = Field(
        default=3, ge=1, description="... and of whose samples at least this many ran"
    )
    mine_vote_allow_empty: bool = Field(
        default=False, description="... and whose result is not empty (unless this is true)"
    )

    @model_validator(mode="after")
    def _vote_fits(self) -> JobSettings:
        if self.mine_vote_min_ran > self.mine_vote_samples:
            raise ValueError(
                f"mine_vote_min_ran ({self.mine_vote_min_ran}) cannot exceed "
                f"mine_vote_samples ({self.mine_vote_samples})"
            )
        return self


class LLMTierSettings(BaseModel):
    """One LLM of the serving cascade: a packaged model, a GGUF file, a registered student
    (``almanac distill register``) or an OpenAI endpoint."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="default", min_length=1)
    backend: Literal["packaged", "gguf", "student", "openai"] = "packaged"
    model: str | None = Field(
        default=None,
        description="packaged model name (default: the default model), registered student "
        "name (backend student) or the served model name (backend openai)",
    )
    path: Path | None = Field(default=None, description="GGUF file (backend gguf)")
    base_url: str | None = Field(default=None, description="endpoint (backend openai)")
    api_key: SecretStr | None = Field(default=None, description="endpoint key (backend openai)")
    prefill: bool = Field(
        default=False,
        description="the endpoint continues a trailing assistant message (llama.cpp server, "
        "vLLM, Ollama; backend openai): SQL replies then start inside a sql fence",
    )
    n_ctx: int = Field(default=8192, gt=0)
    n_threads: int | None = Field(default=None, gt=0)
    prompt_cache_mb: int = Field(
        default=2048,
        ge=0,
        description="llama.cpp context states kept in <data_dir>/prompt-cache so a prompt "
        "that starts like an earlier one (same system prompt and schema) is not prefilled "
        "again, in this process or the next; 0 turns it off (backends packaged and gguf)",
    )
    parallel_sequences: int = Field(
        default=5,
        ge=1,
        le=64,
        description="replies to one prompt llama.cpp decodes together (a greedy answer and "
        "its samples for a vote or a cascade tier, for little more than the time of one); "
        "1 decodes them one after the other (backends packaged and gguf)",
    )
    timeout_s: float = Field(default=60.0, gt=0)
    retries: int = Field(default=2, ge=0)
    max_concurrency: int = Field(default=1, gt=0)
    max_wait_s: float = Field(default=30.0, gt=0)

    @model_validator(mode="after")
    def _backend_fields(self) -> LLMTierSettings:
        if self.backend == "gguf" and self.path is None:
            raise ValueError(f"LLM tier {self.name!r}: backend 'gguf' needs 'path'")
        if self.backend == "openai" and not (self.base_url and self.model):
            raise ValueError(f"LLM tier {self.name!r}: backend 'openai' needs 'base_url', 'model'")
        if self.backend == "student":
            if not self.model:
                raise ValueError(
                    f"LLM tier {self.name!r}: backend 'student' needs 'model', the name of a "
                    "student registered with `almanac distill register` (`almanac distill list`)"
                )
            try:
                check_name(self.model)
            except StudentError as exc:
                raise ValueError(f"LLM tier {self.name!r}: {exc}") from None
        return self


class Settings(BaseSettings):
    """Every setting, with its environment variable in the description."""

    model_config = SettingsConfigDict(
        env_prefix="ALMANAC_", env_nested_delimiter="__", extra="forbid"
    )

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="ALMANAC_DATA_DIR: models, the default SQLite store, exports.",
    )
    store_url: str | None = Field(
        default=None,
        description="ALMANAC_STORE_URL: knowledge store URL; default sqlite:///<data_dir>/knowledge.db",
    )
    log_level: str = Field(default="INFO", description="ALMANAC_LOG_LEVEL")
    target_url: str | None = Field(
        default=None, description="ALMANAC_TARGET_URL: the database questions are about"
    )
    target_name: str | None = Field(
        default=None,
        description="ALMANAC_TARGET_NAME: its [DATABASE:...] tag; default from the URL",
    )
    target_timeout_s: float = Field(default=10.0, gt=0, description="ALMANAC_TARGET_TIMEOUT_S")
    target_max_rows: int = Field(default=10_000, gt=0, description="ALMANAC_TARGET_MAX_ROWS")
    host: str = Field(default="127.0.0.1", description="ALMANAC_HOST")
    port: int = Field(default=8421, ge=0, le=65535, description="ALMANAC_PORT")
    threads: int = Field(
        default=8, gt=0, description="ALMANAC_THREADS: threads running request handlers"
    )
    api_key_pepper: SecretStr | None = Field(
        default=None,
        description="ALMANAC_API_KEY_PEPPER: secret mixed into key hashes; default a file "
        "<data_dir>/secrets/api-key-pepper created on first use",
    )
    auth_cache_s: float = Field(
        default=5.0, ge=0, description="ALMANAC_AUTH_CACHE_S: how long a checked key is trusted"
    )
    warm_on_start: bool = Field(
        default=True,
        description="ALMANAC_WARM_ON_START: after start, load the models of the ask tiers and "
        "prefill the target's shared prompt prefix (system prompt and schema) in the "
        "background, so the first question starts warm",
    )
    metrics_public: bool = Field(
        default=False, description="ALMANAC_METRICS_PUBLIC: /v1/metrics without a key"
    )
    embedder: Literal["minilm", "minilm-torch", "none"] = Field(
        default="minilm",
        description="ALMANAC_EMBEDDER: vector search model: minilm runs all-MiniLM-L6-v2 through "
        "ONNX Runtime (exported once to <data_dir>/models; PyTorch when that fails), "
        "minilm-torch through PyTorch, none: no vectors",
    )
    experience_refit_s: float = Field(
        default=30.0,
        ge=0,
        description="ALMANAC_EXPERIENCE_REFIT_S: least time between two refits of the "
        "experience metric (each takes about a second of CPU; feedback would refit constantly)",
    )
    index_refresh_s: float = Field(
        default=1.0, gt=0, description="ALMANAC_INDEX_REFRESH_S: how often indices follow the store"
    )
    llm_tiers: list[LLMTierSettings] = Field(
        default_factory=lambda: [LLMTierSettings()],
        description="ALMANAC_LLM_TIERS: JSON list; the first tier is the default",
    )
    describe_tier: str | None = Field(
        default=None, description="ALMANAC_DESCRIBE_TIER: tier of describe jobs (default first)"
    )
    cascade_tiers: list[str] = Field(
        default_factory=list,
        description="ALMANAC_CASCADE_TIERS: JSON list of tier names, small to large, ending with "
        "the default tier, for asks with cascade=true (empty: cascade asks use the default tier)",
    )
    max_rows: int = Field(
        default=100, gt=0, le=10_000, description="ALMANAC_MAX_ROWS: rows an answer carries at most"
    )
    feedback_agreement: int = Field(
        default=2,
        ge=1,
        le=100,
        description="ALMANAC_FEEDBACK_AGREEMENT: distinct users whose corrections of a question "
        "must agree on its result before it is shared in their workspace without a review "
        "(1: every correction is shared at once)",
    )
    blame_threshold: int = Field(
        default=3,
        ge=1,
        le=10_000,
        description="ALMANAC_BLAME_THRESHOLD: answers judged wrong that send a knowledge entry "
        "they used to the review queue, once its blame also exceeds twice its credit (mined "
        "entries are deactivated; schema, hand-written and verified ones only flagged)",
    )
    limits: LimitSettings = Field(default_factory=LimitSettings)
    jobs: JobSettings = Field(default_factory=JobSettings)
    confidence: ConfidenceSettings = Field(default_factory=ConfidenceSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = Path(os.environ.get("ALMANAC_CONFIG", "almanac.toml"))
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file))

    @model_validator(mode="after")
    def _unique_tiers(self) -> Settings:
        names = [tier.name for tier in self.llm_tiers]
        if len(set(names)) != len(names):
            raise ValueError(f"LLM tier names must be unique, got {names}")
        if self.describe_tier is not None and self.describe_tier not in names:
            raise ValueError(f"describe_tier {self.describe_tier!r} is not a tier: {names}")
        unknown = [name for name in self.cascade_tiers if name not in names]
        if unknown:
            raise ValueError(f"cascade_tiers {unknown} are not tiers: {names}")
        if self.cascade_tiers and self.cascade_tiers[-1] != names[0]:
            raise ValueError(
                f"cascade_tiers must end with the default tier {names[0]!r}, "
                f"got {self.cascade_tiers}"
            )
        return self

    @property
    def resolved_store_url(self) -> str:
        return self.store_url or f"sqlite:///{self.data_dir / 'knowledge.db'}"

    @property
    def resolved_target_name(self) -> str | None:
        """The target's ``[DATABASE:...]`` tag: set, else the file stem or database name."""
        if self.target_name or not self.target_url:
            return self.target_name
        return database_name_of(self.target_url)

    @property
    def resolved_import_dir(self) -> Path:
        return self.jobs.import_dir or self.data_dir / "imports"


def database_name_of(url: str) -> str:
    """A database's default ``[DATABASE:...]`` name: the file stem or the database name."""
    database = make_url(url).database or "target"
    return Path(database).stem if "/" in database or "." in database else database


def load_settings(**overrides: Any) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
