"""usenet-indexer: a distributed Usenet binary indexer."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
