"""schemathesis against the node API's own OpenAPI schema: whatever it generates, never a 5xx.

With a valid token the calls get past authentication (and mostly end in 4xx: unknown ranges, wrong
epochs, bad bodies); without one every call is 401.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.core.result import Ok

from tests.support.store import services_for
from usenet_indexer.coordinator.http.app import create_app


@pytest.fixture
def app(sqlite_template: Any, tmp_path: Path) -> Iterator[Any]:
    with sqlite_template.database(tmp_path) as url:
        services = services_for(url, tmp_path, stream_chunk_wait_seconds=0.5, stream_keepalive_seconds=0.2)
        services.rules.ensure_default()
        services.groups.add("alt.binaries.fuzz")
        services.groups.plan("alt.binaries.fuzz", 1, 5_000)
        application = create_app(services)
        application.state.test_token = services.nodes.add("fuzzer")[1]
        yield application
        services.close()


@pytest.mark.fuzz
def test_the_node_api_never_answers_5xx(app: Any) -> None:
    # The schema as the app makes it (/openapi.json is for the operator only: issue 15).
    loaded = schemathesis.openapi.from_dict(app.openapi())
    loaded.app = app
    schema = loaded.include(path_regex="^/api/v1/node/")
    token = app.state.test_token
    results = list(schema.get_all_operations())
    assert all(isinstance(result, Ok) for result in results)  # every operation in the schema is valid
    operations = [result.ok() for result in results if isinstance(result, Ok)]
    assert len(operations) >= 14  # every node API route is in the schema

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: Any) -> None:
            response = case.call(headers={"Authorization": f"Bearer {token}"})
            assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text}"
            unauthenticated = case.call(headers={"Authorization": "Bearer uin_not-a-token"})
            assert unauthenticated.status_code == 401

        check()
