"""The grouping loop: loose releases joined in the catalog once their bursts are final (issue 16).

indexing/grouping.py decides (pure); this applies it to the catalog, one group at a time, each in one
transaction that starts with the loop's fence and takes the group's merge locks (``lock_merges``: the
group's and its stripe, which every batch of the group, and a cross-post's batch from another group,
takes), so that no batch storing into these releases runs between the reading and the writing:

1. the group's loose releases (``loose_in_group``, light columns), and its ranges and lanes, which say
   which articles are indexed for good (``Settled``);
2. the bursts whose stretch is settled: their rows read whole, their releases joined;
3. each joined release inserted under its key, its members deleted, their keys kept as its aliases
   (the batch store merges a member's later fragment into it), their probes forgotten and the joined
   release queued for the probe (catalog/probe.py names it from its bodies);
4. the loose releases of final bursts that nothing joins marked ``loose_settled``: never read again;
   so are those of a burst that ``Retention`` lets go (below).

Loose runs (indexing/runs.py: binary-sized articles under fully random subjects) are read alike, from
``loose_runs``: the runs of one poster chained into bursts by the same gaps, and a final burst that may
be a release (``runs.worth_joining``) joined into one release of the catalog (``join_runs``), queued for
the probe, which splits it into files and releases by their bodies; its runs deleted and their keys
kept as its aliases (the batch store drops a run indexed again). A burst that may not be a release
(text, spam) is deleted. So is a burst that ``Retention`` lets go (indexing/grouping.py: its articles
expired from the server, or at the space cap waiting on history that will not be read): runs wait
outside the catalog, and nothing else would ever remove them. Here, not in the clean-up loop, because
this pass already holds the group's merge locks and the bursts: a burst is let go whole, and no batch
adds a run to it meanwhile.

A pass takes at most ``max_members`` loose releases per group (then says there is more), so that a
catalog from before grouping existed is worked through in transactions of bounded length.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from usenet_indexer.catalog.batch_store import (
    insert_releases,
    lock_merges,
    release_row,
    stored_fragment,
    stored_run,
)
from usenet_indexer.db import Database, Row, Tx
from usenet_indexer.db.database import Fence
from usenet_indexer.indexing.bursts import is_burst
from usenet_indexer.indexing.fragment import ReleaseFragment
from usenet_indexer.indexing.grouping import (
    GAP_ARTICLES,
    GAP_SECONDS,
    PROPAGATION_SECONDS,
    LaneState,
    LooseFile,
    RangeState,
    Retention,
    Settled,
    bursts,
    group_loose,
    join_runs,
)
from usenet_indexer.indexing.merge import merge
from usenet_indexer.indexing.naming import normalise_poster
from usenet_indexer.indexing.runs import worth_joining
from usenet_indexer.indexing.window import DEFAULT_HORIZON
from usenet_indexer.logs import get_logger

log = get_logger(__name__)

MAX_MEMBERS = 2_000


@dataclass
class GroupingRound:
    joined: int = 0  # releases made
    members: int = 0  # loose releases joined into them
    alone: int = 0  # loose releases settled alone
    bursts: int = 0  # releases joined from loose runs (to probe)
    dropped: int = 0  # loose runs deleted: bursts that are no release (text, spam)
    expired: int = 0  # let go by retention or the space cap (``Retention``): runs deleted, files settled
    more: bool = False


def settled_of(tx: Tx, group: Row, files: list[LooseFile]) -> Settled:
    """Which of the group's articles, around ``files``, are indexed for good (see ``Settled``)."""
    group_id = int(group["id"])
    low = min((f.first_article for f in files), default=0) - GAP_ARTICLES - DEFAULT_HORIZON
    ranges = [
        RangeState(
            start=int(r["start_id"]),
            end=int(r["end_id"]),
            next=int(r["next_id"]),
            status=str(r["status"]),
            lane=("tail" if int(r["priority"]) < 0 else "history") if r["by_lane"] else None,
        )
        for r in tx.run("grouping_ranges", {"group_id": group_id, "low": max(0, low)})
    ]
    clock = tx.one("database_now")
    now = None if clock is None else int(float(clock["now"]))
    lanes = {
        str(r["lane"]): LaneState(
            next=int(r["snapshot_next"]), flushed=str(r["snapshot_location"] or "").endswith("-flushed")
        )
        for r in tx.run("grouping_lanes", {"group_id": group_id})
    }
    high = group["high_water"]
    return Settled(
        ranges,
        lanes,
        high_water=None if high is None else int(high),
        quiet_before=None if now is None else now - GAP_SECONDS - PROPAGATION_SECONDS,
    )


class BurstsFinal:
    """Whether a burst of the group's loose files (or runs) is final: final in the group, and in every
    other group its files were posted to. A cross-post is stored under its first group's name, but its
    articles carry the numbers of whichever group's range indexed them, so the group's own ranges can
    call a burst final while another group's range holding its articles is still unread. Joined then,
    a release's files went to a burst of their own, and the catalog depended on when the loop ran: a
    ``run`` killed and run again ended with a release different from an uninterrupted run's (issue 17's
    recovery test found it). A group not indexed here brings no articles, and is not asked."""

    def __init__(self, tx: Tx, group: Row, files: list[LooseFile]) -> None:
        self._tx = tx
        self._files = files
        self._name = str(group["name"])
        self._settled: dict[str, Settled | None] = {self._name: settled_of(tx, group, files)}

    def __call__(self, burst: Sequence[LooseFile]) -> bool:
        names = sorted({g for f in burst for g in f.groups} - {self._name})
        return all(settled.final(burst) for settled in self._of([self._name, *names]))

    def _of(self, names: list[str]) -> Iterator[Settled]:
        for name in names:
            if name not in self._settled:
                other = self._tx.one("group_by_name", {"name": name})
                self._settled[name] = None if other is None else settled_of(self._tx, other, self._files)
            settled = self._settled[name]
            if settled is not None:
                yield settled


def retention_of(group: Row, full: bool) -> Retention:
    """What lets a group's loose files and runs go without their bursts final (``Retention``)."""
    low, high = group["low_water"], group["high_water"]
    return Retention(
        low_water=None if low is None else int(low), high_water=None if high is None else int(high), full=full
    )


def _loose_file(row: Row, file_total: int) -> LooseFile:
    """A loose release's or run's row as grouping reads it (a run announces no file total: 0)."""
    return LooseFile(
        key=str(row["key"]),
        poster=normalise_poster(str(row["poster"])),
        file_total=file_total,
        first_article=int(row["first_article"]),
        last_article=int(row["last_article"]),
        first_date=None if row["first_date"] is None else int(row["first_date"]),
        last_date=None if row["last_date"] is None else int(row["last_date"]),
        groups=tuple(str(row["groups"] or "").split()),
    )


def loose_files(tx: Tx, group_name: str) -> list[LooseFile]:
    """The group's loose releases not settled yet, as grouping reads them (light columns)."""
    rows = tx.run("loose_in_group", {"group_name": group_name})
    return [_loose_file(r, int(r["file_total"])) for r in rows]


def loose_runs(tx: Tx, group_name: str) -> tuple[list[LooseFile], dict[str, tuple[int, int]]]:
    """The group's loose runs as grouping reads them, and each one's (articles, largest article)."""
    rows = tx.run("runs_in_group", {"group_name": group_name})
    files = [_loose_file(r, 0) for r in rows]
    return files, {str(r["key"]): (int(r["articles"]), int(r["max_size"])) for r in rows}


class Grouper:
    def __init__(
        self,
        db: Database,
        *,
        fence: Fence | None = None,
        max_members: int = MAX_MEMBERS,
        full: Callable[[], bool] = lambda: False,
    ) -> None:
        self.db = db
        self.fence = fence  # the grouping loop's (coordinator/loops/runner.py)
        self.max_members = max_members
        self.full = full  # the catalog at its space cap (catalog/space.py CatalogSpace.full)

    def work(self) -> bool:
        """One pass over every group with loose releases; True when a group had more than one pass takes."""
        done = self.run_once()
        return done.more

    def run_once(self) -> GroupingRound:
        with self.db.transaction(write=False) as tx:
            names = {str(r["group_name"]) for r in tx.run("loose_groups")}
            names.update(str(r["group_name"]) for r in tx.run("run_groups"))
        total = GroupingRound()
        for name in sorted(names):
            one = self.group(name)
            runs = self.runs(name)
            total.joined += one.joined
            total.members += one.members
            total.alone += one.alone
            total.expired += one.expired
            total.bursts += runs.bursts
            total.dropped += runs.dropped
            total.expired += runs.expired
            total.more = total.more or one.more or runs.more
        return total

    def pending(self) -> int:
        """Loose releases in bursts already final: the next pass joins or settles them. ``run`` is not
        done while there are some (local/progress.py)."""
        count = 0
        with self.db.transaction(write=False) as tx:
            names = {str(r["group_name"]) for r in tx.run("loose_groups")}
            names.update(str(r["group_name"]) for r in tx.run("run_groups"))
            for name in sorted(names):
                group = tx.one("group_by_name", {"name": name})
                if group is None:
                    continue
                files = loose_files(tx, name)
                runs, _ = loose_runs(tx, name)
                final = BurstsFinal(tx, group, files + runs)
                count += sum(len(burst) for burst in bursts(files + runs) if final(burst))
        return count

    def group(self, group_name: str) -> GroupingRound:
        out = GroupingRound()
        full = self.full()  # before the transaction: sizing the database is a query of its own
        with self.db.transaction(fence=self.fence) as tx:
            group = tx.one("group_by_name", {"name": group_name})
            if group is None:
                return out  # releases of a group since removed: left as they are
            group_id = int(group["id"])
            # A cross-post's batch from another group merges into this group's rows too: it holds the
            # stripe of every group its fragments name, so ours is taken with the group's lock.
            lock_merges(tx, group_id, {group_name})
            files = loose_files(tx, group_name)
            if not files:
                return out
            is_final = BurstsFinal(tx, group, files)
            retention = retention_of(group, full)
            keys: list[str] = []
            let_go: list[str] = []
            for burst in bursts(files):
                final = is_final(burst)
                if not final and not retention.lets_go(burst, final):
                    continue
                taken = len(keys) + len(let_go)
                if taken and taken + len(burst) > self.max_members:
                    out.more = True
                    break
                (keys if final else let_go).extend(f.key for f in burst)
            # Let go: settled alone, never read again (they stay releases of the catalog).
            tx.executemany("release_loose_settle", [{"key": k} for k in let_go])
            out.expired += len(let_go)
            if not keys:
                return out
            rows = tx.run("releases_by_keys", {"keys": tx.array(sorted(keys))})
            releases = [stored_fragment(r) for r in rows]
            grouping = group_loose(releases)
            joined_keys: set[str] = set()
            for joined in grouping.joined:
                self._store(tx, joined.release, joined.members, group_name)
                joined_keys.update(joined.members)
                out.joined += 1
                out.members += len(joined.members)
            alone = sorted({r.key for r in releases} - joined_keys)
            tx.executemany("release_loose_settle", [{"key": k} for k in alone])
            out.alone = len(alone)
        if out.joined or out.expired:
            counts = {"releases": out.joined, "files": out.members, "let_go": out.expired}
            log.info("grouping.joined", group=group_name, **counts)
        return out

    def runs(self, group_name: str) -> GroupingRound:
        """The group's final bursts of loose runs joined into releases to probe, or deleted; and the
        bursts ``Retention`` lets go, deleted."""
        out = GroupingRound()
        full = self.full()  # before the transaction: sizing the database is a query of its own
        with self.db.transaction(fence=self.fence) as tx:
            group = tx.one("group_by_name", {"name": group_name})
            if group is None:
                return out
            lock_merges(tx, int(group["id"]), {group_name})
            files, sizes = loose_runs(tx, group_name)
            if not files:
                return out
            is_final = BurstsFinal(tx, group, files)
            retention = retention_of(group, full)
            taken = 0
            for burst in bursts(files):
                final = is_final(burst)
                gone = retention.lets_go(burst, final)
                if not final and not gone:
                    continue
                if taken and taken + len(burst) > self.max_members:
                    out.more = True
                    break
                taken += len(burst)
                keys = sorted(f.key for f in burst)
                if gone:
                    tx.executemany("run_delete", [{"key": k} for k in keys])
                    out.expired += len(keys)
                    continue
                counts = [sizes[k] for k in keys]
                if not worth_joining(sum(n for n, _ in counts), max(largest for _, largest in counts)):
                    tx.executemany("run_delete", [{"key": k} for k in keys])
                    out.dropped += len(keys)
                    continue
                rows = tx.run("runs_by_keys", {"keys": tx.array(keys)})
                release = join_runs([stored_run(r) for r in rows])
                self._store_burst(tx, release, tuple(keys), group_name)
                out.bursts += 1
        if out.bursts or out.dropped or out.expired:
            tally = {"releases": out.bursts, "dropped": out.dropped, "expired": out.expired}
            log.info("grouping.runs", group=group_name, **tally)
        return out

    def _store_burst(self, tx: Tx, release: ReleaseFragment, runs: tuple[str, ...], group_name: str) -> None:
        held = tx.run("releases_by_keys", {"keys": tx.array([release.key])})
        grown = True
        if held:
            # The same burst joined from another group it was cross-posted to, or what a probe left of it
            # (its articles no release holds): only the articles it lacks are added, and it is probed
            # again if there are any (the releases split from it before merge what the probe finds
            # again; a probe queued "done" would leave the burst's articles unnamed for good: test_run).
            stored = stored_fragment(held[0])
            known = {mid for f in stored.files for mid in f.message_id_list()}
            extra = tuple(f for f in release.files if f.message_ids.decode() not in known)
            grown = bool(extra)
            merged = merge(stored, replace(release, files=extra, name=stored.name, file_total=0))
            if is_burst(merged.files):  # not split yet: still never complete (join_runs)
                merged = replace(merged, file_total=len(merged.files) + 1, obfuscated=True)
            tx.execute("release_update", {**release_row(merged, group_name), "id": held[0]["id"]})
        else:
            insert_releases(tx, [release_row(release, group_name)])
        if grown:
            tx.execute("probe_again", {"key": release.key})
        for key in runs:
            tx.execute("release_alias_insert", {"member_key": key, "release_key": release.key})
            tx.execute("run_delete", {"key": key})

    def _store(self, tx: Tx, release: ReleaseFragment, members: tuple[str, ...], group_name: str) -> None:
        held = tx.run("releases_by_keys", {"keys": tx.array([release.key])})
        if held:  # joined before from other members (never by grouping alone): merge into it
            merged = merge(stored_fragment(held[0]), release)
            tx.execute("release_update", {**release_row(merged, group_name), "id": held[0]["id"]})
        else:
            insert_releases(tx, [release_row(release, group_name)])
        for member in members:
            tx.execute("release_alias_insert", {"member_key": member, "release_key": release.key})
            tx.execute("release_aliases_retarget", {"member_key": member, "release_key": release.key})
            tx.execute("release_delete", {"key": member})
            tx.execute("probe_forget", {"key": member})
        # Named from its bodies (catalog/probe.py): no PAR2 message-id is known yet, the probe finds it.
        tx.execute(
            "probe_enqueue",
            {
                "key": release.key,
                "par2_message_id": "",
                "nfo_message_id": None,
                "archive_message_id": None,
                "priority": 0,
            },
        )


__all__ = [
    "MAX_MEMBERS",
    "BurstsFinal",
    "Grouper",
    "GroupingRound",
    "loose_files",
    "loose_runs",
    "settled_of",
]
