"""The coordinator's parts, built once from settings and shared by the CLI, the HTTP app and loops."""

from __future__ import annotations

from dataclasses import dataclass, field

from usenet_indexer.catalog.search import Search
from usenet_indexer.catalog.space import CatalogSpace
from usenet_indexer.coordinator.arrivals import Arrivals
from usenet_indexer.coordinator.registries.groups import Groups
from usenet_indexer.coordinator.registries.nodes import Nodes
from usenet_indexer.coordinator.registries.rules import RuleStore
from usenet_indexer.coordinator.registries.users import Users
from usenet_indexer.db import Database, connect, upgrade
from usenet_indexer.leases.claims import Claims
from usenet_indexer.leases.groups import GroupLeases
from usenet_indexer.leases.planning import PlanSizes
from usenet_indexer.leases.ranges import RangeLeases
from usenet_indexer.settings import Settings
from usenet_indexer.storage.blobs import BlobStore, LocalBlobStore
from usenet_indexer.storage.corpus import Corpus
from usenet_indexer.storage.snapshots import Snapshots
from usenet_indexer.storage.spool import Spool


@dataclass
class Services:
    settings: Settings
    db: Database
    space: CatalogSpace
    ranges: RangeLeases
    lanes: GroupLeases
    claims: Claims
    nodes: Nodes
    groups: Groups
    rules: RuleStore
    blobs: BlobStore
    spool: Spool
    corpus: Corpus
    snapshots: Snapshots
    users: Users
    search: Search
    # Chunks stored by this process's prefetcher, told to its waiting streams (arrivals.py).
    arrivals: Arrivals = field(default_factory=Arrivals)

    def close(self) -> None:
        self.db.close()


def open_blob_store(settings: Settings) -> BlobStore:
    """The local directory (``<data_dir>/blobs`` unless ``storage_url`` names another), or object
    storage for ``storage_url = "s3://…"``, which needs the ``s3`` extra (boto3): without it, a
    ``MissingExtra`` naming the extra (settings refuse such a URL first, when they are checked)."""
    directory = settings.blobs_directory()
    if directory is not None:
        return LocalBlobStore(directory)
    from usenet_indexer.storage.s3 import S3Options, s3_blob_store  # boto3 only when it is used

    secret = settings.s3_secret_access_key
    return s3_blob_store(
        settings.storage_url,
        S3Options(
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            access_key_id=settings.s3_access_key_id,
            secret_access_key=None if secret is None else secret.get_secret_value(),
            addressing_style=settings.s3_addressing_style,
            connections=settings.s3_connections,
            part_bytes=settings.s3_part_bytes,
        ),
    )


def open_services(settings: Settings, *, migrate: bool = True, max_connections: int = 20) -> Services:
    """Connect to the store (applying migrations first: every command that needs the store does)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if migrate:
        upgrade(settings.database_url)
    db = connect(settings.database_url, max_connections=max_connections)
    space = CatalogSpace(db, settings.catalog_cap_bytes)
    ranges = RangeLeases(
        db,
        ttl_seconds=settings.lease_ttl_seconds,
        max_per_group=settings.max_leases_per_group,
        history_allowed=space.history_allowed,
    )
    sizes = PlanSizes(
        settings.range_articles,
        settings.era_articles,
        settings.tail_min_articles,
        chunk_articles=settings.chunk_articles,
        spread=settings.range_spread,
    )
    blobs = open_blob_store(settings)
    rules = RuleStore(db)
    if migrate:
        rules.ensure_default()
    return Services(
        settings=settings,
        db=db,
        space=space,
        ranges=ranges,
        lanes=GroupLeases(db, ranges),
        claims=Claims(db, ttl_seconds=settings.lease_ttl_seconds),
        nodes=Nodes(db),
        groups=Groups(db, sizes),
        rules=rules,
        blobs=blobs,
        spool=Spool(blobs),
        corpus=Corpus(blobs),
        snapshots=Snapshots(blobs, settings.snapshot_max_bytes),
        users=Users(db),
        search=Search(db),
    )
