"""The web admin (``/admin/…``): groups and their ranges, nodes, users, rule sets. Each form is read by
the ``AdminForm`` dependency (the admin's session and its CSRF token, or a refusal raised: access.py)
and done by the operations the command line does too (coordinator/registries/operations.py); a
refused operation shows its page again with why, as a 400."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from usenet_indexer.coordinator.http.access import AdminForm, AdminPage, optional_int
from usenet_indexer.coordinator.http.dashboard import dashboard, workers
from usenet_indexer.coordinator.http.pages import refused, render, sentence
from usenet_indexer.coordinator.http.state import Ops, Svc
from usenet_indexer.coordinator.registries.operations import Done, Operations, Refused
from usenet_indexer.coordinator.registries.users import MAX_LIMIT
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.planning import DEFAULT_BACKFILL_DAYS, Backfill, BackfillError

router = APIRouter(include_in_schema=False)


def backfill_of(unit: str, number: int | None) -> Backfill:
    """The add-group form's history: a number of days (none: the default) or articles, or all of it."""
    try:
        if unit == "days":
            return Backfill.chosen(days=number)
        if unit == "articles":
            return Backfill.chosen(articles=number)
        if unit == "all" and number is None:
            return Backfill.chosen(all_history=True)
    except BackfillError as error:
        raise Refused(str(error)) from None
    raise Refused("history: a number of days or of articles, or all of it with no number")


def toggle(action: str, name: str, enable: Callable[[str, bool], Done]) -> Done:
    """The enable and disable buttons of every admin page; any other action is unknown."""
    if action not in ("enable", "disable"):
        raise unknown(action)
    return enable(name, action == "enable")


def unknown(action: str) -> Refused:
    return Refused(f"unknown action {action[:40]!r}")


@router.get("/admin")
async def admin_home(request: Request) -> Response:
    return RedirectResponse("/admin/groups", status_code=303)


# -- groups and ranges ----------------------------------------------------------------------------


async def groups_page(
    request: Request, services: Services, done: Done | None = None, error: str | None = None
) -> Response:
    board = await run_in_threadpool(dashboard, services)
    return render(
        request,
        "admin_groups.html",
        refused(error),
        board=board,
        message=None if done is None else sentence(done.message),
        error=error,
        default_backfill_days=f"{DEFAULT_BACKFILL_DAYS:g}",
    )


@router.get("/admin/groups", response_class=HTMLResponse, dependencies=[AdminPage])
async def admin_groups(request: Request, services: Svc) -> Response:
    return await groups_page(request, services)


def group_action(ops: Operations, form: dict[str, str]) -> Done:
    action, name = form.get("action", ""), form.get("name", "").strip()
    if action == "add":
        backfill = backfill_of(form.get("backfill_unit", "days"), optional_int(form.get("backfill")))
        return ops.add_group(name, backfill)
    if action == "plan":
        return ops.plan_group(name, optional_int(form.get("low")), optional_int(form.get("high")))
    return toggle(action, name, ops.enable_group)


@router.post("/admin/groups")
async def admin_groups_post(request: Request, form: AdminForm, ops: Ops, services: Svc) -> Response:
    try:
        done = await run_in_threadpool(group_action, ops, form)
    except Refused as refusal:
        return await groups_page(request, services, error=str(refusal))
    return await groups_page(request, services, done)


@router.post("/admin/ranges/{range_id}/retry")
async def admin_retry(request: Request, range_id: str, form: AdminForm, ops: Ops, services: Svc) -> Response:
    try:
        number = optional_int(range_id, low=1)
        if number is None:
            raise Refused("no range")
    except Refused:
        number = None
    try:
        if number is None:
            raise Refused(f"range {range_id[:20]} is not a failed range")
        done = await run_in_threadpool(ops.retry_range, number)
    except Refused as refusal:
        return await groups_page(request, services, error=sentence(str(refusal)))
    if form.get("back") == "dashboard":
        return RedirectResponse("/", status_code=303)
    return await groups_page(request, services, done)


# -- nodes ----------------------------------------------------------------------------------------


async def nodes_page(request: Request, services: Services, ops: Operations, **context: Any) -> Response:
    nodes = await run_in_threadpool(ops.list_nodes)
    found = await run_in_threadpool(workers, services)
    return render(
        request,
        "admin_nodes.html",
        refused(context.get("error")),
        nodes=nodes,
        workers={w.id: w for w in found},
        **context,
    )


@router.get("/admin/nodes", response_class=HTMLResponse, dependencies=[AdminPage])
async def admin_nodes(request: Request, services: Svc, ops: Ops) -> Response:
    return await nodes_page(request, services, ops)


def node_action(ops: Operations, form: dict[str, str]) -> Done:
    action, name = form.get("action", ""), form.get("name", "").strip()
    if action == "add":
        return ops.add_node(name)
    return toggle(action, name, ops.enable_node)


@router.post("/admin/nodes")
async def admin_nodes_post(request: Request, form: AdminForm, ops: Ops, services: Svc) -> Response:
    try:
        done = await run_in_threadpool(node_action, ops, form)
    except Refused as refusal:
        return await nodes_page(request, services, ops, error=str(refusal))
    return await nodes_page(request, services, ops, message=sentence(done.message), secret=done.secret)


# -- users ----------------------------------------------------------------------------------------


async def users_page(request: Request, ops: Operations, **context: Any) -> Response:
    users = await run_in_threadpool(ops.list_users)
    return render(request, "admin_users.html", refused(context.get("error")), users=users, **context)


@router.get("/admin/users", response_class=HTMLResponse, dependencies=[AdminPage])
async def admin_users(request: Request, ops: Ops) -> Response:
    return await users_page(request, ops)


def user_action(ops: Operations, form: dict[str, str]) -> Done:
    action, name = form.get("action", ""), form.get("name", "").strip()
    if action == "add":
        return ops.add_user(
            name,
            requests_per_day=optional_int(form.get("requests_per_day"), high=MAX_LIMIT),
            downloads_per_day=optional_int(form.get("downloads_per_day"), high=MAX_LIMIT),
        )
    if action == "limits":
        return ops.set_limits(
            name,
            optional_int(form.get("requests_per_day"), high=MAX_LIMIT),
            optional_int(form.get("downloads_per_day"), high=MAX_LIMIT),
        )
    return toggle(action, name, ops.enable_user)


@router.post("/admin/users")
async def admin_users_post(request: Request, form: AdminForm, ops: Ops) -> Response:
    try:
        done = await run_in_threadpool(user_action, ops, form)
    except Refused as refusal:
        return await users_page(request, ops, error=str(refusal))
    return await users_page(request, ops, message=sentence(done.message), secret=done.secret)


# -- rule sets ------------------------------------------------------------------------------------


async def rules_page(request: Request, ops: Operations, **context: Any) -> Response:
    versions = await run_in_threadpool(ops.rule_versions)
    version, current = await run_in_threadpool(ops.current_rules_json)
    context.setdefault("draft", current)
    return render(
        request,
        "admin_rules.html",
        refused(context.get("error")),
        versions=versions,
        version=version,
        current=current,
        **context,
    )


@router.get("/admin/rules", response_class=HTMLResponse, dependencies=[AdminPage])
async def admin_rules(request: Request, ops: Ops) -> Response:
    return await rules_page(request, ops)


@router.post("/admin/rules")
async def admin_rules_post(request: Request, form: AdminForm, ops: Ops) -> Response:
    action = form.get("action", "")
    if action == "add":
        draft = form.get("rules", "")
        try:
            done = await run_in_threadpool(ops.save_rules, draft, form.get("note", ""))
        except Refused as refusal:
            return await rules_page(request, ops, error=sentence(str(refusal)), draft=draft)
        return await rules_page(request, ops, message=sentence(done.message))
    if action == "test":
        subject, group = form.get("subject", "")[:2000], form.get("group", "").strip()[:200]
        try:
            tested = await run_in_threadpool(ops.test_rules, subject, group)
        except Refused as refusal:
            return await rules_page(request, ops, error=str(refusal), subject=subject, group=group)
        return await rules_page(request, ops, tested=repr(tested.match), subject=subject, group=group)
    return await rules_page(request, ops, error=str(unknown(action)))
