"""The coordinator's HTTP side: the app (app.py), the node API, the newznab API, the web UI and its
admin, sessions, and the limits every request is held to (network.py)."""

from usenet_indexer.runtime import absent

# FastAPI imports pydantic.v1 (the v1 shim, 19 ms of a core) the first time it checks a route's
# annotations, and in jsonable_encoder, only to refuse v1 models, which this app has none of: with it
# absent, the check says "not v1" (fastapi/_compat/shared.py). Before any route of ours is declared.
absent("pydantic.v1")
