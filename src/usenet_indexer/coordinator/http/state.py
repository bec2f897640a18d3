"""What the routes reach through FastAPI dependencies, the way ``authenticated_node`` reaches the node
registry: the parts ``create_app`` (app.py) keeps on ``app.state``, so that two apps in one process
(the tests make many) keep theirs apart, and a route is a plain module-level function.

The dependencies are ``async``: FastAPI runs a plain ``def`` one on a worker thread, a hop per request
for what is an attribute read.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from usenet_indexer.coordinator.http.metrics import Metrics
from usenet_indexer.coordinator.http.streams import StreamSlots
from usenet_indexer.coordinator.registries.operations import Operations
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.settings import Settings


def services_in(request: Request) -> Services:
    """The app's services, for code that has the request in hand (a dependency of its own, a page)."""
    services: Services = request.app.state.services
    return services


async def services_of(request: Request) -> Services:
    return services_in(request)


async def settings_of(request: Request) -> Settings:
    return services_in(request).settings


async def metrics_of(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


async def operations_of(request: Request) -> Operations:
    operations: Operations = request.app.state.operations
    return operations


async def streams_of(request: Request) -> StreamSlots:
    streams: StreamSlots = request.app.state.streams
    return streams


Svc = Annotated[Services, Depends(services_of)]
Config = Annotated[Settings, Depends(settings_of)]
Meter = Annotated[Metrics, Depends(metrics_of)]
Ops = Annotated[Operations, Depends(operations_of)]
Streams = Annotated[StreamSlots, Depends(streams_of)]
