"""The dashboard's files (planner_service/dashboard/), served by the API's own server at ``/``:
a static page over the REST API, nothing loaded from elsewhere (its Content-Security-Policy
allows this origin only), readable by the VIEWER role like every GET.

    page("/")                 # -> Page(body=b"<!doctype html>...", content_type="text/html")
    page("/state")            # -> None: an API route, not a file
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

DASHBOARD = Path(__file__).parent / "dashboard"
# URL path -> (file in DASHBOARD, content type). Only these are served: no directory walking.
FILES = {
    "/": ("index.html", "text/html"),
    "/dashboard/app.js": ("app.js", "text/javascript"),
    "/dashboard/app.css": ("app.css", "text/css"),
}
# The page loads nothing but its own files and the API: no CDN, no inline script, no framing.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True)
class Page:
    body: bytes
    content_type: str


@cache
def _read(name: str) -> bytes:
    return (DASHBOARD / name).read_bytes()


def page(path: str) -> Page | None:
    """The dashboard file served at ``path``, or None when ``path`` is not one."""
    entry = FILES.get(path)
    if entry is None:
        return None
    name, content_type = entry
    return Page(_read(name), content_type)
