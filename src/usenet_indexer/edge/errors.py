"""The errors of the coordinator's node API as an edge worker sees them (edge/client.py raises them;
the give-back, edge/give_back.py, which the client calls, catches them)."""

from __future__ import annotations


class ApiError(Exception):
    """A call the coordinator refused (4xx other than 409) or kept failing (5xx, network)."""


class Refused(ApiError):
    """The coordinator answered with a refusal (4xx other than 404 and 409) at try ``attempt``: a lease
    request refused at its first try was granted nothing (edge/client.py drops its claim tag)."""

    def __init__(self, message: str, *, status: int, attempt: int) -> None:
        super().__init__(message)
        self.status = status
        self.attempt = attempt


class StreamBroken(Exception):
    """A chunk stream cut in the middle (the coordinator went away): the range is given back."""
