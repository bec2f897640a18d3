"""The web UI: server-rendered pages (Jinja2, plain forms, no JavaScript build) on the coordinator.

- ``/`` the dashboard (coordinator/http/dashboard.py), refreshed by the browser every 15 s;
- ``/releases`` search and browse, ``/releases/{guid}`` a release with its files, ``…/nzb`` its NZB;
- ``/login`` and ``/admin/login`` signing in (users, the admin), ``/logout`` signing out;
- ``/admin/…`` groups, nodes, users and rule sets: admin.py.

Who may see what is access.py's dependencies; the pages and refusals are pages.py's. The login form
has its own double-submit token; wrong passwords lock a client out (lockout.py). Cookies are HttpOnly
and SameSite=Strict.
"""

from __future__ import annotations

import hmac
import math
import secrets
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from usenet_indexer.catalog.search import SearchQuery, words
from usenet_indexer.coordinator.http.access import (
    DashboardViewer,
    FormRefused,
    SessionForm,
    Viewer,
    limit_reached,
    local_path,
    query_int,
    read_form,
)
from usenet_indexer.coordinator.http.dashboard import dashboard
from usenet_indexer.coordinator.http.lockout import LoginLockout
from usenet_indexer.coordinator.http.newznab import NewznabError, base_url, nzb_response
from usenet_indexer.coordinator.http.pages import PageRefused, render
from usenet_indexer.coordinator.http.sessions import (
    SESSION_COOKIE,
    admin_password_ok,
    close_session,
    open_session,
)
from usenet_indexer.coordinator.http.state import Svc, services_in
from usenet_indexer.coordinator.registries.users import ApiUser, LimitReached
from usenet_indexer.indexing import SegmentBlobError, unpack_segments
from usenet_indexer.logs import get_logger

LOGIN_COOKIE = "uix_login"
PAGE_SIZE = 50

log = get_logger(__name__)

router = APIRouter(include_in_schema=False)


def missing(what: str) -> PageRefused:
    return PageRefused(404, template="missing.html", what=what)


# -- the catalog --------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
async def index(request: Request, seen: DashboardViewer, services: Svc) -> Response:
    board = await run_in_threadpool(dashboard, services)
    return render(request, "dashboard.html", board=board, ttl=services.settings.lease_ttl_seconds)


@router.get("/releases", response_class=HTMLResponse)
async def releases(request: Request, seen: Viewer, services: Svc) -> Response:
    q = (request.query_params.get("q") or "").strip()[:200]
    cat = query_int(request, "cat", 0, 99_999)
    page = query_int(request, "page", 1, 200)
    query = SearchQuery(
        text=q or None,
        categories=(cat,) if cat else (),
        limit=PAGE_SIZE,
        offset=(max(page, 1) - 1) * PAGE_SIZE,
    )
    found = await run_in_threadpool(services.search.search, query)
    pages = max(1, math.ceil(found.total / PAGE_SIZE))

    def link(p: int) -> str:
        return "/releases?" + urlencode({k: v for k, v in (("q", q), ("cat", cat), ("page", p)) if v})

    return render(
        request,
        "releases.html",
        q=q,
        cat=cat,
        page=max(page, 1),
        pages=pages,
        found=found,
        link=link,
        searched=bool(words(q)),
    )


@router.get("/releases/{guid}", response_class=HTMLResponse)
async def release(request: Request, guid: str, seen: Viewer, services: Svc) -> Response:
    hit = await run_in_threadpool(services.search.get, guid.lower())
    if hit is None:
        raise missing("release")
    row = await run_in_threadpool(services.search.segments_row, guid.lower())
    files: list[Any] = []
    if row is not None:
        try:
            files = sorted(
                unpack_segments(bytes(row["segments"])), key=lambda f: (f.index or 1 << 30, f.name)
            )
        except SegmentBlobError:
            files = []
    return render(request, "release.html", hit=hit, files=files)


@router.get("/releases/{guid}/nzb")
async def release_nzb(request: Request, guid: str, seen: Viewer, services: Svc) -> Response:
    row = await run_in_threadpool(services.search.segments_row, guid.lower())
    if row is None:
        raise missing("release")
    try:
        response = nzb_response(row, gzip_file=False, accept_gzip=False, base=base_url(services, request))
    except NewznabError:
        raise missing("NZB for this release") from None
    user = seen.user if seen is not None else None
    if user is None:
        await run_in_threadpool(services.search.count_grab, int(row["id"]))
        return response
    try:
        # The grab is counted with the download, in one transaction.
        await run_in_threadpool(services.users.count_download, user, int(row["id"]))
    except LimitReached as reached:
        raise limit_reached(reached) from None
    return response


# -- signing in and out: users at /login, the admin at /admin/login -------------------------------


def login_page(
    request: Request,
    *,
    admin: bool,
    token: str,
    status: int = 200,
    error: str | None = None,
    after: str = "",
) -> HTMLResponse:
    services = services_in(request)
    return render(
        request,
        "login.html",
        status=status,
        login_csrf=token,
        admin_login=admin,
        configured=not admin or bool(services.settings.admin_password_hash),
        error=error,
        after=after,
    )


def fresh_login_page(request: Request, *, admin: bool) -> Response:
    token = secrets.token_urlsafe(24)
    after = local_path(request.query_params.get("next", ""))
    response = login_page(request, admin=admin, token=token, after=after)
    response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", max_age=3600)
    return response


@router.get("/login", response_class=HTMLResponse)
async def user_login_form(request: Request) -> Response:
    return fresh_login_page(request, admin=False)


@router.get("/admin/login", response_class=HTMLResponse)
async def admin_login_form(request: Request) -> Response:
    return fresh_login_page(request, admin=True)


async def sign_in(request: Request, services: Svc, *, admin: bool) -> Response:
    """The login form's POST: its double-submit token checked, wrong passwords locked out per client
    (the app's ``login_lockout``), the session opened."""
    lockout: LoginLockout = request.app.state.login_lockout
    cookie = request.cookies.get(LOGIN_COOKIE, "")
    try:
        form = await read_form(request)
    except FormRefused as refusal:
        return login_page(
            request, admin=admin, token=cookie, status=refusal.status, error=f"Refused: {refusal.reason}."
        )
    after = local_path(form.get("next", ""))
    sent = form.get("csrf", "")
    if not cookie or not hmac.compare_digest(cookie.encode(), sent.encode()):
        error = "The form expired: load the login page again."
        return login_page(request, admin=admin, token=cookie, status=400, error=error, after=after)
    client = request.client.host if request.client else "unknown"
    wait = lockout.locked(client)
    if wait > 0:
        error = f"Too many wrong passwords from {client}: try again in {wait:.0f} s."
        locked = login_page(request, admin=admin, token=cookie, status=429, error=error, after=after)
        locked.headers["Retry-After"] = str(max(1, round(wait)))
        return locked
    password = form.get("password", "")
    user: ApiUser | None = None
    if admin:
        signed_in = await run_in_threadpool(admin_password_ok, services, password)
    else:
        user = await run_in_threadpool(services.users.check_password, form.get("name", "").strip(), password)
        signed_in = user is not None
    if not signed_in:
        locked_for = lockout.failed(client)
        if locked_for:
            log.warning("web.login_locked", client=client, seconds=locked_for, admin=admin)
        error = ("Wrong password." if admin else "Wrong name or password.") + (
            f" Further tries from {client} wait {locked_for:.0f} s." if locked_for else ""
        )
        return login_page(request, admin=admin, token=cookie, status=401, error=error, after=after)
    lockout.succeeded(client)
    token = await run_in_threadpool(open_session, services, user)
    response = RedirectResponse("/admin/groups" if admin else after or "/releases", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=int(services.settings.web_session_hours * 3600),
    )
    response.delete_cookie(LOGIN_COOKIE)
    return response


@router.post("/login")
async def user_login(request: Request, services: Svc) -> Response:
    return await sign_in(request, services, admin=False)


@router.post("/admin/login")
async def admin_login(request: Request, services: Svc) -> Response:
    return await sign_in(request, services, admin=True)


@router.post("/logout")
@router.post("/admin/logout")
async def logout(request: Request, form: SessionForm, services: Svc) -> Response:
    await run_in_threadpool(close_session, services, request)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response
