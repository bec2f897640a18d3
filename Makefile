# The two commands a newcomer needs: `make demo` and `make test`. uv is installed when missing.
# While changing code, `make check` (lint, types and the fast tier of tests, in parallel) is the quick one.
UV := scripts/uv.sh
export UV_LINK_MODE := copy

.PHONY: demo test check lint typecheck pytest pytest-fast bench sync system

# With the s3 extra (boto3): the object-storage tests run against moto's S3 server. `uv run` (below)
# syncs inexactly, so it keeps what this installed.
# The project's own modules compiled too (uv compiles the installed packages, compile-bytecode in
# pyproject.toml): with PYTHONDONTWRITEBYTECODE set, every process would compile them at each start.
sync:
	$(UV) sync --locked --extra s3
	$(UV) run --no-sync python -m compileall -q src

# The main job on the embedded default (SQLite under ./data/demo) against the sample news server:
# indexes its groups, prints the web UI, a newznab search URL and an NZB, serves until Ctrl-C.
demo: sync
	$(UV) run usenet-indexer demo

# Everything the suite needs (system packages, servers), then lint, types and every test.
test: sync system lint typecheck pytest

# Lint, types and the tests that need no real part (INN2, PostgreSQL, nzbget, chromium) and are not
# slow or long fuzzing, on every core: the tiers are told apart by markers (tests/support/tiers.py).
check: sync lint typecheck pytest-fast

system:
	scripts/setup-system.sh

lint:
	$(UV) run ruff check .
	$(UV) run ruff format --check .

# bench/ apart: its scripts and fuzz/'s share top-level module names (see [tool.mypy] in pyproject.toml).
typecheck:
	$(UV) run mypy
	$(UV) run mypy bench

pytest:
	$(UV) run pytest -q --durations=15

pytest-fast:
	$(UV) run pytest -q --fast-tier -n auto

bench: sync system
	$(UV) run python bench/run_all.py
