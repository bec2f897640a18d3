"""The soak's short version (bench/soak.py --quick), as CI runs it: simulated workers over the real
node API with stalls and kills; every range finished, the audit clean, no errors, memory flat."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.postgres
@pytest.mark.slow
def test_quick_soak() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["errors"] == 0, result
    assert result["audit_ok"], result
    assert result["ranges_done"] == result["ranges"]
    assert result["kills"] > 0 and result["stalls"] > 0  # the faults really happened
    assert result["rss_growth_pct"] < 10.0, result
