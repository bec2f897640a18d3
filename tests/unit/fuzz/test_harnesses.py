"""Each atheris harness under fuzz/ runs a few thousand inputs, so CI proves the harnesses work and
catches what a short run finds. Run them longer by hand (docs/RELIABILITY.md says how).

The seed is fixed, so a run is the same every time: a failure here is a finding to reproduce with the
input libFuzzer wrote (its path is in the output), not a flaky test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
HARNESSES = sorted(p.stem for p in (REPO / "fuzz").glob("*.py") if not p.name.startswith("_"))
RUNS = 3000


def test_every_hostile_input_parser_has_a_harness() -> None:
    assert HARNESSES == ["archives", "batch", "frames", "nntp_replies", "overview", "snapshots"]


@pytest.mark.slow
@pytest.mark.parametrize("name", HARNESSES)
def test_harness_runs_clean(name: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "fuzz" / f"{name}.py"),
            f"-atheris_runs={RUNS}",
            "-seed=1",
            f"-artifact_prefix={tmp_path}/",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert f"Done {RUNS} " in output, output[-4000:]
    assert any(corpus.iterdir())  # it started from its seeds
    assert not list(tmp_path.glob("crash-*"))
