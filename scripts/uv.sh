#!/usr/bin/env bash
# Runs uv, installing the pinned version first when the machine has none.
set -euo pipefail
UV_VERSION=0.13.9
if command -v uv >/dev/null 2>&1; then
  exec uv "$@"
fi
if ! python3 -m uv --version >/dev/null 2>&1; then
  echo "uv not found: installing uv ${UV_VERSION} with pip" >&2
  python3 -m pip install --quiet --disable-pip-version-check "uv==${UV_VERSION}" \
    || python3 -m pip install --quiet --user --disable-pip-version-check "uv==${UV_VERSION}"
fi
exec python3 -m uv "$@"
