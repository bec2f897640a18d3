"""What an operator does to nodes, users, groups and rules, written once for the command line (cli.py)
and the web admin (coordinator/http/admin.py).

Each operation checks its input, acts on its registry and says what it did in one clause ("node edge-1
disabled": the command line prints it as it is, the web as a sentence), or raises :class:`Refused`
saying why not and what to do. Parsing what was typed (an option, a form field) is each front end's;
everything after is here, so the two cannot drift apart (the command line's ``groups disable`` of an
unknown group was a traceback, the web's a message).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from usenet_indexer.coordinator.registries.groups import GroupError, Groups, GroupSummary
from usenet_indexer.coordinator.registries.nodes import NodeError, NodeInfo, Nodes
from usenet_indexer.coordinator.registries.rules import RuleStore
from usenet_indexer.coordinator.registries.users import UserError, UserInfo, Users
from usenet_indexer.indexing.rules import Rule, RuleError, RuleSet, SubjectMatch
from usenet_indexer.indexing.rules import test as test_subject
from usenet_indexer.leases.planning import Backfill, BackfillError


class Registries(Protocol):
    """What the operations act on: the coordinator's services have them (a protocol, so that this
    layer imports nothing of the wiring above it)."""

    @property
    def nodes(self) -> Nodes: ...

    @property
    def users(self) -> Users: ...

    @property
    def groups(self) -> Groups: ...

    @property
    def rules(self) -> RuleStore: ...


class Refused(ValueError):
    """An operation not done: the message says why, and what to do, in words a user reads."""


@dataclass(frozen=True, slots=True)
class Done:
    """What an operation did (``message``), and a secret to show once (a node's token, an API key)."""

    message: str
    secret: str | None = None


@dataclass(frozen=True, slots=True)
class Tested:
    """What a rule set version reads from a subject (None: no rule reads it)."""

    version: int
    match: SubjectMatch | None


@contextmanager
def refusing() -> Iterator[None]:
    """The registries' errors (each a ValueError with a message for people) as Refused."""
    try:
        yield
    except Refused:
        raise
    except (NodeError, UserError, GroupError, BackfillError, RuleError) as error:
        raise Refused(str(error)) from None


def state(enabled: bool) -> str:
    return "enabled" if enabled else "disabled"


class Operations:
    def __init__(self, nodes: Nodes, users: Users, groups: Groups, rules: RuleStore) -> None:
        self.nodes = nodes
        self.users = users
        self.groups = groups
        self.rules = rules

    @classmethod
    def of(cls, registries: Registries) -> Operations:
        return cls(registries.nodes, registries.users, registries.groups, registries.rules)

    # -- nodes ------------------------------------------------------------------------------------

    def add_node(self, name: str) -> Done:
        """A new node; its token is the secret (only its hash is kept)."""
        with refusing():
            _, token = self.nodes.add(name)
        return Done(f"node {name} added", token)

    def enable_node(self, name: str, enabled: bool) -> Done:
        with refusing():
            self.nodes.set_enabled(name, enabled)
        return Done(f"node {name} {state(enabled)}")

    def list_nodes(self) -> list[NodeInfo]:
        return self.nodes.all()

    # -- users ------------------------------------------------------------------------------------

    def add_user(
        self,
        name: str,
        *,
        requests_per_day: int | None = None,
        downloads_per_day: int | None = None,
        password: str | None = None,
    ) -> Done:
        """A new user; their API key is the secret (only its hash is kept)."""
        with refusing():
            _, key = self.users.add(
                name,
                requests_per_day=requests_per_day,
                downloads_per_day=downloads_per_day,
                password=password,
            )
        return Done(f"user {name} added", key)

    def enable_user(self, name: str, enabled: bool) -> Done:
        with refusing():
            self.users.set_enabled(name, enabled)
        return Done(f"user {name} {state(enabled)}")

    def new_key(self, name: str) -> Done:
        with refusing():
            key = self.users.new_key(name)
        return Done(f"user {name} has a new API key; the old one no longer works", key)

    def set_password(self, name: str, password: str) -> Done:
        with refusing():
            self.users.set_password(name, password)
        return Done(f"user {name}: password set; they sign in at /login")

    def set_limits(self, name: str, requests_per_day: int | None, downloads_per_day: int | None) -> Done:
        """A user's daily limits, both set (None: no limit)."""
        with refusing():
            self.users.set_limits(name, requests_per_day, downloads_per_day)
        shown = ["no limit" if n is None else f"{n:,}" for n in (requests_per_day, downloads_per_day)]
        return Done(f"user {name}: requests a day {shown[0]}, downloads a day {shown[1]}")

    def list_users(self) -> list[UserInfo]:
        return self.users.all()

    # -- groups and their ranges ------------------------------------------------------------------

    def add_group(self, name: str, backfill: Backfill, *, capture: bool = False) -> Done:
        with refusing():
            self.groups.add(name, backfill=backfill, capture=capture)
        return Done(f"group {name} added: history back to {backfill.describe()}")

    def set_backfill(self, name: str, backfill: Backfill) -> Done:
        with refusing():
            self.groups.set_backfill(name, backfill)
        return Done(f"group {name}: history back to {backfill.describe()}, from the planner's next pass")

    def enable_group(self, name: str, enabled: bool) -> Done:
        with refusing():
            self.groups.set_enabled(name, enabled)
        return Done(f"group {name} {state(enabled)}")

    def plan_group(self, name: str, low: int | None, high: int | None) -> Done:
        """Ranges planned from watermarks given by hand (the planner reads them from the news server)."""
        if low is None or high is None:
            raise Refused("give both watermarks, the group's low and its high")
        with refusing():
            try:
                result = self.groups.plan(name, low, high)
            except GroupError:
                raise
            except ValueError as error:  # watermarks planning cannot take (planning.py says which)
                raise Refused(str(error)) from None
        if result.reset is not None:
            return Done(f"group {name}: nothing planned: {result.reset}")
        tail = sum(1 for r in result.ranges if r.priority < 0)
        history = len(result.ranges) - tail
        return Done(f"group {name}: planned {len(result.ranges)} ranges ({tail} tail, {history} history)")

    def retry_range(self, range_id: int) -> Done:
        """A failed range planned again from its resume point."""
        if not self.groups.retry(range_id):
            raise Refused(f"range {range_id} is not a failed range")
        return Done(f"range {range_id} planned again")

    def list_groups(self) -> list[GroupSummary]:
        return self.groups.summaries()

    # -- rule sets --------------------------------------------------------------------------------

    def add_rule(self, name: str, pattern: str, *, group: str | None = None, first: bool = False) -> Done:
        """The current rules and this one as the next version (tried first, with ``first``)."""
        _, current = self.rules.current()
        with refusing():
            rule = Rule(name=name, subject=pattern, group=group)
            rules = (rule, *current.rules) if first else (*current.rules, rule)
            version = self.rules.add(RuleSet(version=current.version, rules=rules), note=f"added {name}")
        return Done(f"rule {name} added: rule set version {version}")

    def remove_rule(self, name: str) -> Done:
        _, current = self.rules.current()
        kept = tuple(rule for rule in current.rules if rule.name != name)
        if len(kept) == len(current.rules):
            raise Refused(f"no rule {name} in the current rule set (see `usenet-indexer rules list`)")
        version = self.rules.add(RuleSet(version=current.version, rules=kept), note=f"removed {name}")
        return Done(f"rule {name} removed: rule set version {version}")

    def save_rules(self, text: str, note: str = "") -> Done:
        """A whole rule set, as JSON (what ``current_rules`` gives, edited), as the next version."""
        try:
            rules = RuleSet.from_json(text)
        except (RuleError, ValueError, KeyError, TypeError) as error:
            raise Refused(f"not saved: {error}") from None
        version = self.rules.add(rules, note[:200])
        return Done(f"saved as version {version}")

    def current_rules(self) -> tuple[int, RuleSet]:
        return self.rules.current()

    def current_rules_json(self) -> tuple[int, str]:
        """The current version and its rules as indented JSON (the web admin's editor)."""
        version, current = self.rules.current()
        return version, json.dumps(json.loads(current.to_json()), indent=2)

    def rule_versions(self) -> list[tuple[int, str, float, int]]:
        return self.rules.versions()

    def test_rules(self, subject: str, group: str) -> Tested:
        """What the current rules read from ``subject`` posted in ``group``."""
        version, current = self.rules.current()
        with refusing():
            try:
                return Tested(version, test_subject(subject, group, current))
            except RuleError:
                raise
            except ValueError as error:
                raise Refused(str(error)) from None
