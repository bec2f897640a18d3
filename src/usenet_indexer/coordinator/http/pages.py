"""The web UI's pages: Jinja2 templates (``templates/``) with the filters people read numbers and times
through, the security headers every page carries, and the refusals a route raises instead of returning
(:class:`PageRefused`, :class:`SignInFirst`), each made into its page once, by the handlers
``install_page_handlers`` puts on the app."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from usenet_indexer.coordinator.http.sessions import current_session
from usenet_indexer.coordinator.http.state import services_in
from usenet_indexer.indexing.categories import NAMES
from usenet_indexer.readable import ago, human_bytes, human_number, timestamp

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).parent / "templates"


def sentence(clause: str) -> str:
    """What an operation did (``node edge-1 added``, as the command line prints it) as the web shows
    it: ``Node edge-1 added.``"""
    return clause[:1].upper() + clause[1:] + ("" if clause.endswith(".") else ".")


def environment() -> Environment:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

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
    """A page of the app's templates (``templates``), with who is signed in."""
    services = services_in(request)
    env = templates(request.app)
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


def templates(app: FastAPI) -> Environment:
    """The app's templates (``app.state.pages``), loaded at its first page: Jinja2 is 14 ms of a core
    at every start (python -X importtime), and a coordinator may serve only its workers. Two first
    pages at once may each load them; either serves."""
    env: Environment | None = getattr(app.state, "pages", None)
    if env is None:
        env = app.state.pages = environment()
    return env


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
    app.add_exception_handler(PageRefused, page_refused)
    app.add_exception_handler(SignInFirst, sign_in_first)
