"""The API's documentation pages, served without a CDN: ``/docs`` (Swagger UI), ``/redoc``
(ReDoc) and ``/`` (links to them).

FastAPI's own pages load Swagger UI's and ReDoc's JavaScript and CSS from a CDN, so they are blank
offline. These pages load the same files from the installed ``fastapi-offline`` package
(``swagger-ui-bundle.js``, ``swagger-ui.css``, ``redoc.standalone.js``, ``favicon.png``),
mounted under :data:`ASSETS_PATH`. :func:`install_docs` expects the app to have been created
with ``docs_url=None, redoc_url=None``.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from server.responses import FastJSONResponse
from server.web import UI_PATH

ASSETS_PATH = "/docs-assets"
ASSETS_DIR = Path(fastapi_offline.__file__).parent / "static"
DOCS_PATH = "/docs"
REDOC_PATH = "/redoc"
OAUTH2_REDIRECT_PATH = "/docs/oauth2-redirect"
HEALTH_PATH = "/v1/health"


def _assets_dir() -> Path:
    """The installed package's asset folder, checked so a broken install fails at start."""
    missing = [
        name
        for name in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js")
        if not (ASSETS_DIR / name).is_file()
    ]
    if missing:
        raise RuntimeError(f"fastapi-offline's assets in {ASSETS_DIR} lack {missing}")
    return ASSETS_DIR


def install_docs(app: FastAPI) -> None:
    """Add ``/``, ``/docs``, ``/redoc`` and the asset mount to ``app`` (none needs a key)."""
    app.mount(ASSETS_PATH, StaticFiles(directory=_assets_dir()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/", include_in_schema=False)
    async def index(request: Request) -> FastJSONResponse:
        root = request.scope.get("root_path", "")
        return FastJSONResponse(
            {
                "name": app.title,
                "version": app.version,
                "docs": f"{root}{DOCS_PATH}",
                "redoc": f"{root}{REDOC_PATH}",
                "openapi": f"{root}{openapi_url}",
                "health": f"{root}{HEALTH_PATH}",
                "ui": f"{root}{UI_PATH}/",
            }
        )

    @app.get(DOCS_PATH, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT_PATH}",
            swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
        )

    @app.get(OAUTH2_REDIRECT_PATH, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC_PATH, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
            with_google_fonts=False,
        )
