"""The web UI: server-rendered pages (Jinja2, plain forms, no JavaScript build) on the coordinator.

- ``/`` the dashboard (coordinator/http/dashboard.py), refreshed by the browser every 15 s;
- ``/releases`` search and browse, ``/releases/{guid}`` a release with its files, ``…/nzb`` its NZB;
- ``/admin/…`` groups, nodes, users and rule sets, behind the admin login.

The admin login: one password (settings ``admin_password_hash``, or ``admin_password`` hashed when
settings load), a session cookie whose hash is stored (``web_sessions``) with the session's CSRF token,
which every admin form carries and every admin POST checks; the login form has its own
double-submit token. Cookies are HttpOnly and SameSite=Strict.
"""

from __future__ import annotations

import hmac
import json
import math
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from usenet_indexer.catalog.search import SearchQuery, words
from usenet_indexer.coordinator.http.dashboard import dashboard, retry_range
from usenet_indexer.coordinator.http.lockout import LoginLockout
from usenet_indexer.coordinator.http.network import RequestRefused, is_loopback
from usenet_indexer.coordinator.http.newznab import NewznabError, base_url, nzb_response
from usenet_indexer.coordinator.http.sessions import (
    SESSION_COOKIE,
    Session,
    admin_password_ok,
    admin_session,
    close_session,
    current_session,
    open_session,
)
from usenet_indexer.coordinator.planning import DEFAULT_BACKFILL_DAYS, Backfill
from usenet_indexer.coordinator.registries.groups import GroupError
from usenet_indexer.coordinator.registries.nodes import NodeError
from usenet_indexer.coordinator.registries.users import ApiUser, LimitReached, UserError
from usenet_indexer.coordinator.services import Services
from usenet_indexer.indexing import SegmentBlobError, unpack_segments
from usenet_indexer.indexing.categories import NAMES
from usenet_indexer.indexing.rules import RuleError, RuleSet
from usenet_indexer.indexing.rules import test as test_subject
from usenet_indexer.logs import get_logger

__all__ = ["ago", "human_bytes", "human_number", "web_router"]

LOGIN_COOKIE = "uix_login"
PAGE_SIZE = 50
MAX_FORM_BYTES = 256 << 10

TEMPLATES = Path(__file__).parent / "templates"

log = get_logger(__name__)


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


def _environment() -> Environment:
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


def operator_only(request: Request) -> None:
    """For what tells an operator how the coordinator runs (metrics, status, the API's schema): a
    client on this machine (a scraper beside it), or the admin logged in; 403 for anyone else (issue
    15: they were open to the world)."""
    host = request.client.host if request.client else ""
    if is_loopback(host) or admin_session(request.app.state.services, request) is not None:
        return
    raise HTTPException(
        403, "only from the coordinator's own machine, or logged in as the admin (/admin/login)"
    )


class Web:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.env = _environment()

    # -- rendering --------------------------------------------------------------------------------

    def render(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        session = self.session(request)
        html = self.env.get_template(template).render(
            request=request,
            admin=session is not None and session.admin,
            user=session.user.name if session is not None and session.user is not None else None,
            csrf=session.csrf if session else "",
            public_catalog=self.services.settings.public_catalog,
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

    def session(self, request: Request) -> Session | None:
        return current_session(self.services, request)


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


def _optional_int(value: str | None, *, low: int = 0, high: int = 2**62) -> int | None:
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        raise ValueError(f"not a whole number: {text[:40]!r}")
    number = int(text)
    if not low <= number <= high:
        raise ValueError(f"{number} is outside {low}..{high}")
    return number


def _backfill(unit: str, number: int | None) -> Backfill:
    """The add-group form's history: a number of days (none: the default) or articles, or all of it."""
    if unit == "days":
        return Backfill.chosen(days=number)
    if unit == "articles":
        return Backfill.chosen(articles=number)
    if unit == "all" and number is None:
        return Backfill.chosen(all_history=True)
    raise ValueError("history: a number of days or of articles, or all of it with no number")


def _query_int(request: Request, name: str, default: int, high: int) -> int:
    try:
        value = _optional_int(request.query_params.get(name), high=high)
    except ValueError:
        return default
    return default if value is None else value


def _local_path(target: str) -> str:
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


def refused(error: object) -> int:
    """The status of an admin page: 400 when it shows why a form was refused. (It was 200, so a
    refusal looked like success to anything but a person reading the page.)"""
    return 400 if error else 200


def web_router(services: Services) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    web = Web(services)
    lockout = LoginLockout()

    def blocking(function: Any, *args: Any) -> Any:
        return run_in_threadpool(function, *args)

    # -- the catalog: the dashboard and the releases; private unless public_catalog ----------------

    async def viewer(request: Request, *, counted: bool = True) -> Session | Response | None:
        """Who looks at the catalog: their session (a user's page ``counted`` against their day, as an
        API request is), None for anyone on a public catalog, or the response that sends them to sign
        in or says their day's limit is reached. (Issue 18: the pages and NZBs were open to anyone who
        could reach the coordinator.)"""
        session: Session | None = await blocking(web.session, request)
        if session is None:
            if services.settings.public_catalog:
                return None
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse("/login?" + urlencode({"next": target}), status_code=303)
        if counted and session.user is not None:
            try:
                await blocking(services.users.count_request, session.user)
            except LimitReached as reached:
                return limit_page(request, reached)
        return session

    def limit_page(request: Request, reached: LimitReached) -> Response:
        error = f"Your daily {reached}: it starts again at midnight UTC."
        return web.render(request, "refused.html", status=429, error=error)

    @router.get("/", response_class=HTMLResponse)
    async def index(request: Request) -> Response:
        # Not counted: the dashboard refreshes itself every 15 s (5,760 pages a day left open).
        seen = await viewer(request, counted=False)
        if isinstance(seen, Response):
            return seen
        board = await blocking(dashboard, services)
        return web.render(request, "dashboard.html", board=board, ttl=services.settings.lease_ttl_seconds)

    @router.get("/releases", response_class=HTMLResponse)
    async def releases(request: Request) -> Response:
        seen = await viewer(request)
        if isinstance(seen, Response):
            return seen
        q = (request.query_params.get("q") or "").strip()[:200]
        cat = _query_int(request, "cat", 0, 99_999)
        page = _query_int(request, "page", 1, 200)
        query = SearchQuery(
            text=q or None,
            categories=(cat,) if cat else (),
            limit=PAGE_SIZE,
            offset=(max(page, 1) - 1) * PAGE_SIZE,
        )
        found = await blocking(services.search.search, query)
        pages = max(1, math.ceil(found.total / PAGE_SIZE))

        def link(p: int) -> str:
            return "/releases?" + urlencode({k: v for k, v in (("q", q), ("cat", cat), ("page", p)) if v})

        return web.render(
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
    async def release(request: Request, guid: str) -> Response:
        seen = await viewer(request)
        if isinstance(seen, Response):
            return seen
        hit = await blocking(services.search.get, guid.lower())
        if hit is None:
            return web.render(request, "missing.html", status=404, what="release")
        row = await blocking(services.search.segments_row, guid.lower())
        files: list[Any] = []
        if row is not None:
            try:
                files = sorted(
                    unpack_segments(bytes(row["segments"])), key=lambda f: (f.index or 1 << 30, f.name)
                )
            except SegmentBlobError:
                files = []
        return web.render(request, "release.html", hit=hit, files=files)

    @router.get("/releases/{guid}/nzb")
    async def release_nzb(request: Request, guid: str) -> Response:
        seen = await viewer(request)
        if isinstance(seen, Response):
            return seen
        row = await blocking(services.search.segments_row, guid.lower())
        if row is None:
            return web.render(request, "missing.html", status=404, what="release")
        try:
            response = nzb_response(row, gzip_file=False, accept_gzip=False, base=base_url(services, request))
        except NewznabError:
            return web.render(request, "missing.html", status=404, what="NZB for this release")
        user = seen.user if seen is not None else None
        if user is None:
            await blocking(services.search.count_grab, int(row["id"]))
            return response
        try:
            # The grab is counted with the download, in one transaction.
            await blocking(services.users.count_download, user, int(row["id"]))
        except LimitReached as reached:
            return limit_page(request, reached)
        return response

    # -- signing in and out: users at /login, the admin at /admin/login ---------------------------

    def login_page(
        request: Request,
        *,
        admin: bool,
        token: str,
        status: int = 200,
        error: str | None = None,
        after: str = "",
    ) -> HTMLResponse:
        return web.render(
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
        after = _local_path(request.query_params.get("next", ""))
        response = login_page(request, admin=admin, token=token, after=after)
        response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", max_age=3600)
        return response

    @router.get("/login", response_class=HTMLResponse)
    async def user_login_form(request: Request) -> Response:
        return fresh_login_page(request, admin=False)

    @router.get("/admin/login", response_class=HTMLResponse)
    async def admin_login_form(request: Request) -> Response:
        return fresh_login_page(request, admin=True)

    async def sign_in(request: Request, *, admin: bool) -> Response:
        """The login form's POST: its double-submit token checked, wrong passwords locked out per
        client, the session opened."""
        cookie = request.cookies.get(LOGIN_COOKIE, "")
        try:
            form = await read_form(request)
        except FormRefused as refusal:
            return login_page(
                request, admin=admin, token=cookie, status=refusal.status, error=f"Refused: {refusal.reason}."
            )
        after = _local_path(form.get("next", ""))
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
            signed_in = await blocking(admin_password_ok, services, password)
        else:
            user = await blocking(services.users.check_password, form.get("name", "").strip(), password)
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
        token = await blocking(open_session, services, user)
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
    async def user_login(request: Request) -> Response:
        return await sign_in(request, admin=False)

    @router.post("/admin/login")
    async def admin_login(request: Request) -> Response:
        return await sign_in(request, admin=True)

    async def session_form(request: Request, *, admin: bool) -> dict[str, str] | Response:
        """The form of a POST made in a session (the admin's, for ``admin``), or the response that
        refuses it (no such session, bad CSRF token)."""
        session = await blocking(web.session, request)
        if session is None or (admin and not session.admin):
            to_admin = admin or request.url.path.startswith("/admin/")
            return RedirectResponse("/admin/login" if to_admin else "/login", status_code=303)
        try:
            form = await read_form(request)
        except FormRefused as refusal:
            reason = f"Refused: {refusal.reason}."
            return web.render(request, "refused.html", status=refusal.status, error=reason)
        if not hmac.compare_digest(session.csrf.encode(), form.get("csrf", "").encode()):
            return web.render(request, "missing.html", status=403, what="valid form token (reload the page)")
        if any("\x00" in key or "\x00" in value for key, value in form.items()):
            # PostgreSQL's text refuses NUL: a name with one was a 500 on the first query (found by
            # tests/integration/access/test_admin_fuzz.py). No form field has a use for it.
            return web.render(
                request, "refused.html", status=400, error="A form field holds a NUL character: refused."
            )
        return form

    async def admin_form(request: Request) -> dict[str, str] | Response:
        return await session_form(request, admin=True)

    async def admin_page(request: Request) -> Response | None:
        if await blocking(admin_session, services, request) is None:
            return RedirectResponse("/admin/login", status_code=303)
        return None

    @router.post("/logout")
    @router.post("/admin/logout")
    async def logout(request: Request) -> Response:
        form = await session_form(request, admin=False)
        if isinstance(form, Response):
            return form
        await blocking(close_session, services, request)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    @router.get("/admin")
    async def admin_home(request: Request) -> Response:
        return RedirectResponse("/admin/groups", status_code=303)

    # -- groups and ranges ------------------------------------------------------------------------

    async def groups_page(request: Request, message: str | None = None, error: str | None = None) -> Response:
        board = await blocking(dashboard, services)
        return web.render(
            request,
            "admin_groups.html",
            refused(error),
            board=board,
            message=message,
            error=error,
            default_backfill_days=f"{DEFAULT_BACKFILL_DAYS:g}",
        )

    @router.get("/admin/groups", response_class=HTMLResponse)
    async def admin_groups(request: Request) -> Response:
        return await admin_page(request) or await groups_page(request)

    @router.post("/admin/groups")
    async def admin_groups_post(request: Request) -> Response:
        form = await admin_form(request)
        if isinstance(form, Response):
            return form
        action = form.get("action", "")
        name = form.get("name", "").strip()
        try:
            if action == "add":
                backfill = _backfill(form.get("backfill_unit", "days"), _optional_int(form.get("backfill")))
                await blocking(lambda: services.groups.add(name, backfill=backfill))
                return await groups_page(
                    request, message=f"Group {name} added: history back to {backfill.describe()}."
                )
            if action in ("enable", "disable"):
                await blocking(services.groups.set_enabled, name, action == "enable")
                return await groups_page(request, message=f"Group {name} {action}d.")
            if action == "plan":
                low, high = _optional_int(form.get("low")), _optional_int(form.get("high"))
                if low is None or high is None:
                    raise ValueError("give both watermarks")
                result = await blocking(services.groups.plan, name, low, high)
                if result.reset is not None:
                    return await groups_page(request, message=f"{name}: nothing planned: {result.reset}.")
                return await groups_page(request, message=f"{name}: planned {len(result.ranges)} ranges.")
        except (GroupError, ValueError) as error:
            return await groups_page(request, error=str(error))
        return await groups_page(request, error=f"unknown action {action[:40]!r}")

    @router.post("/admin/ranges/{range_id}/retry")
    async def admin_retry(request: Request, range_id: str) -> Response:
        form = await admin_form(request)
        if isinstance(form, Response):
            return form
        try:
            number = _optional_int(range_id, low=1)
        except ValueError:
            number = None
        done = number is not None and await blocking(retry_range, services, number)
        if done and form.get("back") == "dashboard":
            return RedirectResponse("/", status_code=303)
        if done:
            return await groups_page(request, message=f"Range {number} planned again.")
        return await groups_page(request, error=f"Range {range_id[:20]} is not a failed range.")

    # -- nodes ------------------------------------------------------------------------------------

    async def nodes_page(request: Request, **context: Any) -> Response:
        nodes = await blocking(services.nodes.all)
        board = await blocking(dashboard, services)
        return web.render(
            request,
            "admin_nodes.html",
            refused(context.get("error")),
            nodes=nodes,
            workers={w.id: w for w in board.workers},
            **context,
        )

    @router.get("/admin/nodes", response_class=HTMLResponse)
    async def admin_nodes(request: Request) -> Response:
        return await admin_page(request) or await nodes_page(request)

    @router.post("/admin/nodes")
    async def admin_nodes_post(request: Request) -> Response:
        form = await admin_form(request)
        if isinstance(form, Response):
            return form
        action, name = form.get("action", ""), form.get("name", "").strip()
        try:
            if action == "add":
                _, token = await blocking(services.nodes.add, name)
                return await nodes_page(request, message=f"Node {name} added.", secret=token)
            if action in ("enable", "disable"):
                await blocking(services.nodes.set_enabled, name, action == "enable")
                return await nodes_page(request, message=f"Node {name} {action}d.")
        except NodeError as error:
            return await nodes_page(request, error=str(error))
        return await nodes_page(request, error=f"unknown action {action[:40]!r}")

    # -- users ------------------------------------------------------------------------------------

    async def users_page(request: Request, **context: Any) -> Response:
        users = await blocking(services.users.all)
        return web.render(request, "admin_users.html", refused(context.get("error")), users=users, **context)

    @router.get("/admin/users", response_class=HTMLResponse)
    async def admin_users(request: Request) -> Response:
        return await admin_page(request) or await users_page(request)

    @router.post("/admin/users")
    async def admin_users_post(request: Request) -> Response:
        form = await admin_form(request)
        if isinstance(form, Response):
            return form
        action, name = form.get("action", ""), form.get("name", "").strip()
        try:
            if action == "add":
                requests_limit = _optional_int(form.get("requests_per_day"), high=2**31 - 1)
                downloads_limit = _optional_int(form.get("downloads_per_day"), high=2**31 - 1)
                _, key = await blocking(
                    lambda: services.users.add(
                        name, requests_per_day=requests_limit, downloads_per_day=downloads_limit
                    )
                )
                return await users_page(request, message=f"User {name} added.", secret=key)
            if action in ("enable", "disable"):
                await blocking(services.users.set_enabled, name, action == "enable")
                return await users_page(request, message=f"User {name} {action}d.")
        except (UserError, ValueError) as error:
            return await users_page(request, error=str(error))
        return await users_page(request, error=f"unknown action {action[:40]!r}")

    # -- rule sets --------------------------------------------------------------------------------

    async def rules_page(request: Request, **context: Any) -> Response:
        versions = await blocking(services.rules.versions)
        version, current = await blocking(services.rules.current)
        pretty = json.dumps(json.loads(current.to_json()), indent=2)
        context.setdefault("draft", pretty)
        return web.render(
            request,
            "admin_rules.html",
            refused(context.get("error")),
            versions=versions,
            version=version,
            current=pretty,
            **context,
        )

    @router.get("/admin/rules", response_class=HTMLResponse)
    async def admin_rules(request: Request) -> Response:
        return await admin_page(request) or await rules_page(request)

    @router.post("/admin/rules")
    async def admin_rules_post(request: Request) -> Response:
        form = await admin_form(request)
        if isinstance(form, Response):
            return form
        action = form.get("action", "")
        if action == "add":
            draft = form.get("rules", "")
            try:
                rules = RuleSet.from_json(draft)
            except (RuleError, ValueError, KeyError, TypeError) as error:
                return await rules_page(request, error=f"Not saved: {error}", draft=draft)
            version = await blocking(services.rules.add, rules, form.get("note", "")[:200])
            return await rules_page(request, message=f"Saved as version {version}.")
        if action == "test":
            subject, group = form.get("subject", "")[:2000], form.get("group", "").strip()[:200]
            _, current = await blocking(services.rules.current)
            try:
                result = test_subject(subject, group, current)
            except (RuleError, ValueError) as error:
                return await rules_page(request, error=str(error), subject=subject, group=group)
            return await rules_page(request, tested=repr(result), subject=subject, group=group)
        return await rules_page(request, error=f"unknown action {action[:40]!r}")

    return router
