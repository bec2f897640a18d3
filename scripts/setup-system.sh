#!/usr/bin/env bash
# What the test suite needs beyond Python packages: system packages and servers on loopback.
# PostgreSQL is the machine's own (127.0.0.1:5432, trust auth); it is only checked here.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "PostgreSQL is not answering on 127.0.0.1:5432: start it (pg_ctlcluster <version> main start)" >&2
  exit 1
fi
