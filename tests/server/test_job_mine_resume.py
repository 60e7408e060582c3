"""A ``mine`` job whose worker died (mid-way, or after the merge wrote) is resumed by another
worker without duplicates: the store ends equal to one uninterrupted run's (GeoQuery, real
SQLite store and target, no job workers but the one the test starts)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from indices.embeddings import HashingEmbedder
from kb.profile.profiler import ProfileOptions, profile_database
from server.job_kinds import runners_for
from server.state import build_state
from server.worker import JobContext, JobWorker
from tests.agents.learn.conftest import GEOQUERY
from tests.server.conftest import Server, make_settings, running_server
from tests.server.test_job_mine import COUNT, DATABASE, _mined, _submit, experiences

__all__ = ["experiences"]  # the module fixture, shared with test_job_mine.py


class WorkerDiedError(RuntimeError):
    pass


class DyingContext(JobContext):
    """A job context whose worker dies after ``experiences`` experiences, or (None) right
    after the merge wrote, before the job could finish."""

    def __init__(self, *args: Any, experiences: int | None) -> None:
        super().__init__(*args)
        self.experiences = experiences

    def progress(self, fraction: float | None, message: str | None = None) -> None:
        done = message or ""
        if self.experiences is not None and done.startswith(f"mined {self.experiences}/"):
            raise WorkerDiedError(done)
        super().progress(fraction, message)

    def log(self, line: str, level: str = "info") -> None:
        if self.experiences is None and line.startswith("labeled: mined "):
            raise WorkerDiedError("after the merge")
        super().log(line, level)


def _comparable(store: Any) -> dict[str, Any]:
    found = {}
    for entry in _mined(store):
        data = entry.to_dict()
        for moving in ("timestamp", "last_verified"):
            data.pop(moving, None)
        data["parents"] = sorted(data["parents"])
        data["metadata"]["mining"].pop("job_id")
        found[entry.id] = data
    return found


@pytest.fixture()
def idle_servers(tmp_path, experiences) -> Iterator[Any]:
    """Servers without job workers over GeoQuery, each with its own profiled store."""
    with ExitStack() as stack:

        def start(name: str) -> Server:
            folder = tmp_path / name
            folder.mkdir()
            settings = make_settings(
                folder,
                f"sqlite:///{folder / 'knowledge.db'}",
                target_url=f"sqlite:///{GEOQUERY}",
                target_name=DATABASE,
                jobs={"workers": 0},
            )
            state = build_state(settings, embedder=HashingEmbedder(), llms=None)
            server = stack.enter_context(running_server(state))
            assert state.target is not None
            options = ProfileOptions(progress=False)
            profile_database(state.target, state.store, database_name=DATABASE, options=options)
            state.store.upsert_many(experiences)
            return server

        yield start


def _run_once(server: Server, context_type: type[JobContext] = JobContext, **kw: Any) -> Any:
    state = server.state
    worker_id = f"worker-{context_type.__name__}"
    job = state.jobs.claim(worker_id, ["mine"])
    assert job is not None
    context = context_type(state.jobs, job, worker_id, threading.Event(), **kw)
    return context.run(runners_for(state)["mine"])


@pytest.mark.parametrize("dies", [COUNT // 2, None], ids=["mid-way", "after-the-merge"])
def test_a_job_whose_worker_died_resumes_without_duplicates(idle_servers, dies):
    whole = idle_servers("whole")
    _submit(whole, {})
    single = _run_once(whole)
    assert single["merge"]["inserted"] > 0

    broken = idle_servers("broken")
    job_id = _submit(broken, {})
    with pytest.raises(WorkerDiedError):
        _run_once(broken, DyingContext, experiences=dies)
    written = _mined(broken.state.store)
    assert len(written) == (0 if dies else single["merge"]["inserted"])

    assert broken.state.jobs.recover(lease_s=0.0) == [(job_id, "queued")]
    worker = JobWorker(broken.state.jobs, runners_for(broken.state), poll_s=0.05)
    worker.start()
    try:
        job = broken.wait_job(job_id)
    finally:
        worker.stop()
    assert job["state"] == "succeeded" and job["attempts"] == 2, job
    resumed = job["result"]
    assert resumed["merge"].get("inserted", 0) == (single["merge"]["inserted"] if dies else 0)
    assert _comparable(broken.state.store) == _comparable(whole.state.store)
    assert {e.metadata["mining"]["job_id"] for e in _mined(broken.state.store)} == {job_id}
