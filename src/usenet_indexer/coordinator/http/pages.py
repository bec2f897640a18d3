"""The web UI's pages: Jinja2 templates (``templates/``) with the filters people read numbers and times
through, the security headers every page carries, and the refusals a route raises instead of returning
(:class:`PageRefused`, :class:`SignInFirst`), each made into its page once, by the handlers
``install_page_handlers`` puts on the app."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from usenet_indexer.coordinator.http.sessions import current_session
from usenet_indexer.coordinator.services import Services
from usenet_indexer.indexing.categories import NAMES

TEMPLATES = Path(__file__).parent / "templates"


# -- formatting: numbers with units, relative times -----------------------------------------------


def human_bytes(value: float | None) -> str:
    if value is None:
        return "–"
    size = float(value)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def human_number(value: float | None) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def ago(seconds_ago: float | None) -> str:
    """ "3 min ago", "just now", "in 2 h" (clocks disagree): what a person reads at a glance."""
    if seconds_ago is None or math.isnan(seconds_ago):
        return "never"
    future = seconds_ago < 0
    seconds = abs(seconds_ago)
    if seconds < 5:
        return "just now"
    text = f"{seconds:.0f} s"
    for unit, size in (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            text = f"{seconds / size:.0f} {unit}"
            break
    return f"in {text}" if future else f"{text} ago"


def timestamp(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def sentence(clause: str) -> str:
    """What an operation did (``node edge-1 added``, as the command line prints it) as the web shows
    it: ``Node edge-1 added.``"""
    return clause[:1].upper() + clause[1:] + ("" if clause.endswith(".") else ".")


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["bytes"] = human_bytes
    env.filters["num"] = human_number
    env.filters["ago"] = ago
    env.filters["timestamp"] = timestamp
    env.filters["category"] = lambda c: NAMES.get(int(c), str(c))
    env.globals["categories"] = sorted(NAMES.items())
    return env


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A page of the app's templates (``app.state.pages``), with who is signed in."""
    services: Services = request.app.state.services
    env: Environment = request.app.state.pages
    session = current_session(services, request)
    html = env.get_template(template).render(
        request=request,
        admin=session is not None and session.admin,
        user=session.user.name if session is not None and session.user is not None else None,
        csrf=session.csrf if session else "",
        public_catalog=services.settings.public_catalog,
        now=time.time(),
        **context,
    )
    response = HTMLResponse(html, status_code=status)
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'none'; frame-ancestors 'none'"
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def refused(error: object) -> int:
    """The status of an admin page: 400 when it shows why a form was refused. (It was 200, so a
    refusal looked like success to anything but a person reading the page.)"""
    return 400 if error else 200


class PageRefused(Exception):
    """A request refused with a page saying why: ``refused.html`` with ``error``, or another template
    with its context (``missing.html`` and ``what``)."""

    def __init__(
        self,
        status: int,
        error: str | None = None,
        *,
        template: str = "refused.html",
        headers: dict[str, str] | None = None,
        **context: Any,
    ) -> None:
        super().__init__(error or template)
        self.status = status
        self.template = template
        self.headers = headers or {}
        self.context = {"error": error, **context} if error is not None else context


class SignInFirst(Exception):
    """A request that needs a session it lacks: sent to sign in (303 to ``location``)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


async def page_refused(request: Request, refusal: Exception) -> Response:
    assert isinstance(refusal, PageRefused)
    response = render(request, refusal.template, refusal.status, **refusal.context)
    response.headers.update(refusal.headers)
    return response


async def sign_in_first(request: Request, refusal: Exception) -> Response:
    assert isinstance(refusal, SignInFirst)
    return RedirectResponse(refusal.location, status_code=303)


def install_page_handlers(app: FastAPI) -> None:
    app.state.pages = environment()
    app.add_exception_handler(PageRefused, page_refused)
    app.add_exception_handler(SignInFirst, sign_in_first)
