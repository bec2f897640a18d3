"""Nodes and groups as operators manage them."""

from __future__ import annotations

import pytest

from tests.support.store import query
from usenet_indexer.coordinator.registries.groups import GroupError
from usenet_indexer.coordinator.registries.nodes import (
    NodeDisabled,
    NodeError,
    Unauthorized,
    hash_token,
    new_token,
)
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.leases.planning import Backfill


def test_node_token_is_shown_once_and_only_its_hash_kept(services: Services) -> None:
    node_id, token = services.nodes.add("edge-1")
    assert token.startswith("uin_")
    stored = query(services.db, "SELECT token_hash FROM nodes")[0]["token_hash"]
    assert stored == hash_token(token)
    assert token not in str(query(services.db, "SELECT * FROM nodes"))
    assert services.nodes.authenticate(token) == node_id


def test_bad_tokens_and_disabled_nodes_are_refused(services: Services) -> None:
    _, token = services.nodes.add("edge-1")
    for bad in (None, "", "nope", "uin_" + "x" * 43, token + "x"):
        with pytest.raises(Unauthorized):
            services.nodes.authenticate(bad)
    services.nodes.set_enabled("edge-1", False)
    with pytest.raises(NodeDisabled, match="edge-1 is disabled"):
        services.nodes.authenticate(token)
    services.nodes.set_enabled("edge-1", True)
    services.nodes.authenticate(token)


def test_a_token_made_before_the_store_was_open_is_the_one_issued(services: Services) -> None:
    """`run` makes its workers' tokens before it opens the store (issue 17), and issues them after."""
    early = new_token()
    node_id, token = services.nodes.issue("run-worker-1", early)
    assert token == early and services.nodes.authenticate(early) == node_id
    again = new_token()
    assert services.nodes.issue("run-worker-1", again) == (node_id, again)  # the next run's
    with pytest.raises(Unauthorized):
        services.nodes.authenticate(early)  # the earlier run's token no longer works
    with pytest.raises(NodeError, match="new_token"):
        services.nodes.issue("run-worker-1", "uin_short")


def test_node_names_are_checked(services: Services) -> None:
    services.nodes.add("edge-1")
    with pytest.raises(NodeError, match="exists already"):
        services.nodes.add("edge-1")
    with pytest.raises(NodeError, match="not a node name"):
        services.nodes.add("../etc")
    with pytest.raises(NodeError, match="no node"):
        services.nodes.set_enabled("ghost", False)


def test_groups_are_listed_with_range_counts(services: Services, node: int) -> None:
    services.groups.add("alt.binaries.a", backfill=Backfill(articles=2_500))
    with pytest.raises(GroupError, match="already added"):
        services.groups.add("alt.binaries.a")
    with pytest.raises(GroupError, match="not a newsgroup name"):
        services.groups.add("alt..bad/../name")
    with pytest.raises(GroupError, match="no group"):
        services.groups.plan("alt.binaries.none", 1, 10)
    services.groups.plan("alt.binaries.a", 1, 10_000)
    assert services.ranges.lease(node) is not None
    (summary,) = services.groups.summaries()
    assert summary.ranges == {"planned": 3, "leased": 1}  # 10000, 9000s, 8000s, 7501–7999
    assert sum(summary.articles.values()) == 2_500
    assert (summary.low_water, summary.high_water) == (1, 10_000)


def test_planning_twice_with_the_same_watermarks_adds_nothing(services: Services) -> None:
    services.groups.add("alt.binaries.a")
    assert len(services.groups.plan("alt.binaries.a", 1, 3_000).ranges) == 4
    assert services.groups.plan("alt.binaries.a", 1, 3_000).ranges == []
    assert len(query(services.db, "SELECT id FROM ranges")) == 4
