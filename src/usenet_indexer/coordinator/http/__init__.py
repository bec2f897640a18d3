"""The coordinator's HTTP side: the app (app.py), the node API, the newznab API, the web UI and its
admin, sessions, and the limits every request is held to (network.py)."""

import sys

from usenet_indexer.runtime import absent

# FastAPI imports pydantic.v1 (the v1 shim, 19 ms of a core) the first time it checks a route's
# annotations, and in jsonable_encoder, only to refuse v1 models, which this app has none of: with it
# absent, the check says "not v1" (fastapi/_compat/shared.py). Before any route of ours is declared.
absent("pydantic.v1")


def import_fastapi() -> None:
    """Import FastAPI with the pydantic models it declares on import built at their first use, not
    at start-up: its OpenAPI document's ~40 models (fastapi/openapi/models.py), which only
    ``/openapi.json`` and ``/docs`` validate, were a third of FastAPI's import, ~80 ms of a core at
    every start of ``run`` and ``serve`` (issue 17, session 14: docs/PERFORMANCE.md). pydantic's own
    ``defer_build``, set on ``BaseModel`` for the import only: a model made then takes it from its
    base. Call before the app's modules are imported; without it they work the same, only slower."""
    if "fastapi" in sys.modules:
        return
    from pydantic import BaseModel, ConfigDict

    declared = BaseModel.model_config
    BaseModel.model_config = ConfigDict(defer_build=True)
    try:
        import fastapi  # noqa: F401
    finally:
        BaseModel.model_config = declared
