"""Who may see a web page or send a form, as FastAPI dependencies that refuse by raising (pages.py
makes each refusal its page, once): the catalog's viewer, the admin's pages and forms, a session's
forms, the operator's pages; and the forms themselves, read with a cap and checked for their CSRF token.

The admin login: one password (settings ``admin_password_hash``, or ``admin_password`` hashed when
settings load), a session cookie whose hash is stored (``web_sessions``) with the session's CSRF token,
which every admin form carries and every admin POST checks (sessions.py).
"""

from __future__ import annotations

import hmac
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from usenet_indexer.coordinator.http.network import RequestRefused, is_loopback
from usenet_indexer.coordinator.http.pages import PageRefused, SignInFirst
from usenet_indexer.coordinator.http.sessions import Session, admin_session, current_session
from usenet_indexer.coordinator.http.state import services_in
from usenet_indexer.coordinator.registries.operations import Refused
from usenet_indexer.coordinator.registries.users import LimitReached

MAX_FORM_BYTES = 256 << 10


class FormRefused(Exception):
    """A form body that cannot be read: its status (413 too large, 400 unreadable) and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


async def read_form(request: Request) -> dict[str, str]:
    """A url-encoded or multipart form as strings (first value of each field), capped in size;
    FormRefused when it is too large or cannot be parsed. (Both were an empty form, which the CSRF
    check then refused as "invalid form token": the wrong reason.)"""
    length = request.headers.get("content-length")
    if length and not length.isdigit():
        raise FormRefused(400, f"Content-Length is not a number: {length[:40]!r}")
    if length and int(length) > MAX_FORM_BYTES:
        raise FormRefused(413, f"the form is {int(length):,} bytes; at most {MAX_FORM_BYTES:,} are read")
    try:
        form = await request.form(max_files=0, max_fields=100)
    except RequestRefused:
        raise  # cut off while read (too large, too slow): its own status
    except Exception as error:  # a malformed body is a 400 with the parser's reason, never a 500
        raise FormRefused(400, f"the form could not be read: {error}") from None
    return {key: value for key, value in form.multi_items() if isinstance(value, str)}


def optional_int(value: str | None, *, low: int = 0, high: int = 2**62) -> int | None:
    """A form's whole number (None when left empty); Refused saying why it is not one."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        raise Refused(f"not a whole number: {text[:40]!r}")
    number = int(text)
    if not low <= number <= high:
        raise Refused(f"{number} is outside {low}..{high}")
    return number


def query_int(request: Request, name: str, default: int, high: int) -> int:
    try:
        value = optional_int(request.query_params.get(name), high=high)
    except Refused:
        return default
    return default if value is None else value


def local_path(target: str) -> str:
    """``target`` if it is a path on this site (where to go after signing in), else "": never another
    site's address (an open redirect)."""
    if (
        target.startswith("/")
        and not target.startswith(("//", "/\\"))
        and len(target) < 1000
        and target.isascii()
        and target.isprintable()
    ):
        return target
    return ""


# -- the catalog: the dashboard and the releases; private unless public_catalog --------------------


async def _viewer(request: Request, *, counted: bool) -> Session | None:
    """Who looks at the catalog: their session (a user's page ``counted`` against their day, as an API
    request is), or None for anyone on a public catalog; anyone else is sent to sign in, and a user
    past their day's limit refused (429). (Issue 18: the pages and NZBs were open to anyone who could
    reach the coordinator.)"""
    services = services_in(request)
    session: Session | None = await run_in_threadpool(current_session, services, request)
    if session is None:
        if services.settings.public_catalog:
            return None
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise SignInFirst("/login?" + urlencode({"next": target}))
    if counted and session.user is not None:
        try:
            await run_in_threadpool(services.users.count_request, session.user)
        except LimitReached as reached:
            raise limit_reached(reached) from None
    return session


def limit_reached(reached: LimitReached) -> PageRefused:
    return PageRefused(429, f"Your daily {reached}: it starts again at midnight UTC.")


async def viewer(request: Request) -> Session | None:
    return await _viewer(request, counted=True)


async def dashboard_viewer(request: Request) -> Session | None:
    # Not counted: the dashboard refreshes itself every 15 s (5,760 pages a day left open).
    return await _viewer(request, counted=False)


Viewer = Annotated[Session | None, Depends(viewer)]
DashboardViewer = Annotated[Session | None, Depends(dashboard_viewer)]


# -- forms sent in a session, and the admin's pages ------------------------------------------------


async def _session_form(request: Request, *, admin: bool) -> dict[str, str]:
    """The form of a POST made in a session (the admin's, for ``admin``); refused without such a
    session (sent to sign in), unreadable, without the session's CSRF token, or holding a NUL."""
    session = await run_in_threadpool(current_session, services_in(request), request)
    if session is None or (admin and not session.admin):
        to_admin = admin or request.url.path.startswith("/admin/")
        raise SignInFirst("/admin/login" if to_admin else "/login")
    try:
        form = await read_form(request)
    except FormRefused as refusal:
        raise PageRefused(refusal.status, f"Refused: {refusal.reason}.") from None
    if not hmac.compare_digest(session.csrf.encode(), form.get("csrf", "").encode()):
        raise PageRefused(403, template="missing.html", what="valid form token (reload the page)")
    if any("\x00" in key or "\x00" in value for key, value in form.items()):
        # PostgreSQL's text refuses NUL: a name with one was a 500 on the first query (found by
        # tests/integration/access/test_admin_fuzz.py). No form field has a use for it.
        raise PageRefused(400, "A form field holds a NUL character: refused.")
    return form


async def admin_form(request: Request) -> dict[str, str]:
    return await _session_form(request, admin=True)


async def session_form(request: Request) -> dict[str, str]:
    return await _session_form(request, admin=False)


async def admin_page(request: Request) -> None:
    if await run_in_threadpool(admin_session, services_in(request), request) is None:
        raise SignInFirst("/admin/login")


AdminForm = Annotated[dict[str, str], Depends(admin_form)]
SessionForm = Annotated[dict[str, str], Depends(session_form)]
AdminPage = Depends(admin_page)


def operator_only(request: Request) -> None:
    """For what tells an operator how the coordinator runs (metrics, status, the API's schema): a
    client on this machine (a scraper beside it), or the admin logged in; 403 for anyone else (issue
    15: they were open to the world)."""
    host = request.client.host if request.client else ""
    if is_loopback(host) or admin_session(services_in(request), request) is not None:
        return
    raise HTTPException(
        403, "only from the coordinator's own machine, or logged in as the admin (/admin/login)"
    )
