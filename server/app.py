"""The HTTP app: ``create_app(state)``.

::

    state = build_state(load_settings())
    app = create_app(state)          # uvicorn.run(app) — ``almanac serve`` does this

Routers, one per area: system (health, metrics), knowledge, jobs, admin (keys, audit); ``/``,
``/docs`` and ``/redoc`` come from :mod:`server.docs_pages` (assets served locally), the web
page ``/ui/`` from :mod:`server.web`. Every
router takes its collaborators from the :class:`server.state.AppState` and the caller from
:func:`server.deps.require`; new areas (the ask pipeline, feedback) add a router here.

Middleware, outermost first: metrics (every request is counted, refusals included), the body
size limit (413), the request timeout (504), the last resort for unexpected errors (500 JSON,
the connection kept), and the JSON guard (422 for bodies with lone surrogates, NaN, overflowing
numbers or deep nesting). The lifespan starts the index loader, the job workers and the
warm-up (:mod:`server.readiness`: the models loaded and prefilled with
``ALMANAC_WARM_ON_START``), and stops them and closes the store on shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import APIRouter, FastAPI
from starlette.concurrency import run_in_threadpool

from server import (
    docs_pages,
    routes_admin,
    routes_analyze,
    routes_ask,
    routes_jobs,
    routes_knowledge,
    routes_knowledge_review,
    routes_review,
    routes_sql,
    routes_system,
)
from server.errors import UnhandledErrorMiddleware, install_error_handlers
from server.json_guard import JSONGuardMiddleware
from server.limits import BodyLimitMiddleware, TimeoutMiddleware
from server.metrics import MetricsMiddleware
from server.readiness import WarmUp
from server.responses import FastJSONResponse
from server.routes_system import almanac_version
from server.state import AppState
from server.web import install_web

log = logging.getLogger(__name__)
ROUTERS: tuple[APIRouter, ...] = (
    routes_system.router,
    routes_knowledge_review.router,  # before /v1/knowledge/{id}, which would take "review"
    routes_knowledge.router,
    routes_jobs.router,
    routes_admin.router,
    routes_ask.router,
    routes_analyze.router,
    routes_sql.router,
    routes_review.router,
)
IMPORT_PATH = "/v1/knowledge/import"


def create_app(
    state: AppState, *, routers: Iterable[APIRouter] = (), close_state: bool = True
) -> FastAPI:
    """The FastAPI app over ``state``.

    Args:
        state: the collaborators (see :func:`server.state.build_state`).
        routers: extra routers (areas added later).
        close_state: close the store and target connections on shutdown (tests that restart
            an app over the same state pass False).
    """

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # fewer handler threads than anyio's 40: less GIL hand-off, steadier latency
        to_thread.current_default_thread_limiter().total_tokens = state.settings.threads
        await run_in_threadpool(state.start)
        WarmUp(state.readiness, state.indices, state.asks).start(
            models=state.settings.warm_on_start
        )
        log.info("almanac %s serving %r", almanac_version(), state.store)
        try:
            yield
        finally:
            await run_in_threadpool(state.close if close_state else state.stop)

    app = FastAPI(
        title="Almanac",
        version=almanac_version(),
        description="Knowledge-base-centred NL2SQL server",
        lifespan=lifespan,
        default_response_class=FastJSONResponse,
        docs_url=None,  # docs_pages serves /docs and /redoc without a CDN
        redoc_url=None,
    )
    app.state.almanac = state
    docs_pages.install_docs(app)
    install_web(app)
    install_error_handlers(app)
    for router in (*ROUTERS, *routers):
        app.include_router(router)
    limits = state.settings.limits
    app.add_middleware(JSONGuardMiddleware)
    app.add_middleware(UnhandledErrorMiddleware)
    app.add_middleware(TimeoutMiddleware, timeout_s=limits.request_timeout_s)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=limits.max_body_bytes,
        per_path={IMPORT_PATH: limits.max_import_bytes},
    )
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)
    return app
