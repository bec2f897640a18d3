#!/usr/bin/env bash
# What the test suite needs beyond Python packages: system packages and servers on loopback.
# PostgreSQL is the machine's own (127.0.0.1:5432, trust auth); it is only checked here.
set -euo pipefail
cd "$(dirname "$0")/.."

# par2: the real par2cmdline makes the PAR2 files the PAR2 reader is tested on (run, never imported).
# nzbget: the real downloader of the NZB round trip (tests/integration/web/test_roundtrip_nzbget.py).
# chromium: the headless browser of the web UI tests (driven by the playwright package, never a
# browser it downloads itself).
# tmux: the pseudo-terminal `run`'s live view is read from (tests/e2e/test_run_terminal.py).
# faketime: a process with its wall clock stepped, against SQLite's lease clock (run, never linked into
# ours: tests/integration/db/test_lease_clock.py).
# libarchive-tools (bsdtar), unar (lsar) and 7zip (7zz): the independent readers the archive reader's
# tests prove their RAR and 7z archives against (tests/unit/indexing/test_archives.py; run, never linked).
PACKAGES=(par2 nzbget chromium tmux faketime libarchive-tools unar 7zip)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# INN2, the real news server of the NNTP tests, on loopback (installs, configures and starts it).
scripts/inn2-setup.sh >/dev/null

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "PostgreSQL is not answering on 127.0.0.1:5432: start it (pg_ctlcluster <version> main start)" >&2
  exit 1
fi
