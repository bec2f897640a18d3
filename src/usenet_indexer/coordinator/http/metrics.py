"""``/metrics`` for Prometheus: counters kept as the node API works, gauges read from the store when
scraped. A registry per app (not the process-global one), so two apps in one process stay apart."""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from usenet_indexer.coordinator.wiring import Services

SPOOL_SIZE_EVERY_SECONDS = 30.0  # sizing the spool lists its blobs (a walk of files, or S3 list pages)


class Metrics:
    def __init__(self, services: Services) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.leases = Counter(
            "usenet_indexer_leases_granted", "Range leases granted", ["took_over"], registry=r
        )
        self.leases_lost = Counter(
            "usenet_indexer_leases_lost", "Node API calls refused: lease lost", registry=r
        )
        self.batches = Counter("usenet_indexer_batches_stored", "Batches stored", registry=r)
        self.batches_replayed = Counter(
            "usenet_indexer_batches_replayed", "Retried batches answered", registry=r
        )
        self.headers = Counter(
            "usenet_indexer_headers_indexed", "Overview lines in stored batches", registry=r
        )
        self.batch_bytes = Counter(
            "usenet_indexer_batch_bytes", "Compressed batch bytes received", registry=r
        )
        self.releases = Counter("usenet_indexer_release_fragments", "Release fragments merged", registry=r)
        self.api_seconds = Histogram(
            "usenet_indexer_node_api_seconds",
            "Node API call durations",
            ["route"],
            registry=r,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        r.register(StoreCollector(services))


class StoreCollector(Collector):
    def __init__(self, services: Services) -> None:
        self.services = services
        self._spool_size = 0
        self._spool_at = float("-inf")

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self.services.db.transaction(write=False) as tx:
            statuses = tx.run("metrics_ranges")
            live = tx.one("metrics_live_workers", {"ttl": self.services.settings.lease_ttl_seconds})
            probes = tx.run("metrics_probes")
            joined = tx.one("metrics_joined")
        ranges = GaugeMetricFamily("usenet_indexer_ranges", "Ranges by status", labels=["status"])
        for row in statuses:
            ranges.add_metric([row["status"]], int(row["n"]))
        yield ranges
        yield GaugeMetricFamily(
            "usenet_indexer_live_leases",
            "Leases heartbeated within the TTL",
            value=int(live["n"] if live else 0),
        )
        # Probes (issue 16): how many, and what their bodies cost the news account.
        count = GaugeMetricFamily("usenet_indexer_probes", "Probes by status", labels=["status"])
        articles = GaugeMetricFamily(
            "usenet_indexer_probe_articles", "Articles fetched by probes, by their status", labels=["status"]
        )
        fetched = GaugeMetricFamily(
            "usenet_indexer_probe_bytes", "Bytes fetched by probes, by their status", labels=["status"]
        )
        passwords = GaugeMetricFamily(
            "usenet_indexer_password_probes",
            "Of the probes, the password probes of releases named by their subjects, by status",
            labels=["status"],
        )
        password_articles = GaugeMetricFamily(
            "usenet_indexer_password_probe_articles",
            "Articles fetched by password probes, by their status",
            labels=["status"],
        )
        for row in probes:
            count.add_metric([row["status"]], int(row["n"]))
            articles.add_metric([row["status"]], int(row["articles"]))
            fetched.add_metric([row["status"]], int(row["bytes"]))
            passwords.add_metric([row["status"]], int(row["passwords"]))
            password_articles.add_metric([row["status"]], int(row["password_articles"]))
        yield count
        yield articles
        yield fetched
        yield passwords
        yield password_articles
        yield GaugeMetricFamily(
            "usenet_indexer_joined_releases",
            "Releases joined from loose files (per-file random names)",
            value=int(joined["releases"] if joined else 0),
        )
        yield GaugeMetricFamily(
            "usenet_indexer_joined_files",
            "Loose files joined into releases",
            value=int(joined["members"] if joined else 0),
        )
        if time.monotonic() - self._spool_at > SPOOL_SIZE_EVERY_SECONDS:
            self._spool_size = self.services.spool.size()
            self._spool_at = time.monotonic()
        yield GaugeMetricFamily("usenet_indexer_spool_bytes", "Bytes in the spool", value=self._spool_size)
