"""``/docs`` and ``/redoc`` load every asset from the server itself (they work offline), and
``GET /`` answers links instead of 404."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urljoin, urlsplit

import pytest

from indices.embeddings import HashingEmbedder
from server.state import build_state
from tests.server.conftest import Server, make_settings, running_server

ASSET_URL = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|\burl\s*:\s*["']([^"']+)["']""")
BASE = "http://testserver"
CONTENT_TYPES = {
    ".js": ("text/javascript", "application/javascript"),
    ".css": ("text/css",),
    ".png": ("image/png",),
}


@pytest.fixture()
def server(tmp_path) -> Iterator[Server]:
    settings = make_settings(tmp_path, f"sqlite:///{tmp_path / 'knowledge.db'}")
    state = build_state(settings, embedder=HashingEmbedder(), llms=None)
    with running_server(state) as started:
        yield started


def referenced_urls(html: str) -> list[str]:
    """Every ``src=``, ``href=`` and Swagger/ReDoc ``url:`` in a page, resolved against it."""
    found = [a or b for a, b in ASSET_URL.findall(html)]
    assert found, html
    return [urljoin(f"{BASE}/docs", url) for url in found]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_every_asset_from_the_server_itself(server, page):
    reply = server.client.get(page)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/html")
    html = reply.text
    assert "cdn" not in html.lower(), html
    urls = referenced_urls(html)
    # the page's own inline ReDoc call names the schema in a <redoc spec-url=...> tag
    spec = re.findall(r"""spec-url\s*=\s*["']([^"']+)["']""", html)
    urls += [urljoin(f"{BASE}/docs", url) for url in spec]
    assets = [url for url in urls if urlsplit(url).path.endswith(tuple(CONTENT_TYPES))]
    assert len(assets) >= (2 if page == "/docs" else 1), urls
    for url in urls:
        parts = urlsplit(url)
        assert f"{parts.scheme}://{parts.netloc}" == BASE, f"{page} loads {url} from elsewhere"
        answer = server.client.get(parts.path)
        assert answer.status_code == 200, (url, answer.status_code)
        suffix = next((s for s in CONTENT_TYPES if parts.path.endswith(s)), None)
        if suffix is not None:
            content_type = answer.headers["content-type"]
            assert content_type.startswith(CONTENT_TYPES[suffix]), (url, content_type)
            assert len(answer.content) > 1000 or suffix == ".png", url


def test_the_schema_the_pages_show_is_served(server):
    reply = server.client.get("/openapi.json")
    assert reply.status_code == 200
    assert "/v1/ask" in reply.json()["paths"]


def test_the_root_answers_links_to_the_docs_and_health(server):
    reply = server.client.get("/")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["name"] == "Almanac"
    assert body["version"]
    assert body["docs"] == "/docs" and body["redoc"] == "/redoc"
    for link in ("docs", "redoc", "openapi", "health"):
        assert server.client.get(body[link]).status_code == 200, link


def test_the_pages_are_left_out_of_the_schema(server):
    paths = server.client.get("/openapi.json").json()["paths"]
    assert not {"/", "/docs", "/redoc", "/docs/oauth2-redirect"} & set(paths)
