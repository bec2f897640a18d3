"""``make bench``: every benchmark in this folder at its --quick size, one after the other; the last
line of each (one JSON object) is collected into bench/results.json and summed up as a table.

Figures are ratios against baselines measured in the same run wherever the benchmark has one: the
machines are shared and noisy, and a ratio survives that where an absolute figure does not.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def machine() -> str:
    cpus = len(
        [line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("processor")]
    )
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    return f"{cpus} x {model}, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the full sizes (much longer)")
    parser.add_argument("names", nargs="*", help="only these benchmarks (e.g. leases stream)")
    args = parser.parse_args()
    scripts = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "run_all.py")
    if args.names:
        scripts = [p for p in scripts if p.stem in args.names]
    results: dict[str, object] = {
        "machine": machine(),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    rows = []
    for script in scripts:
        command = [sys.executable, str(script)] + ([] if args.full else ["--quick"])
        print(f"== {script.stem}", flush=True)
        began = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - began
        sys.stdout.write(done.stdout)
        lines = [line for line in done.stdout.strip().splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            sys.stdout.write(done.stderr[-3000:])
            results[script.stem] = {"error": f"exit {done.returncode}", "seconds": round(seconds, 1)}
            rows.append((script.stem, "FAILED", seconds))
            continue
        figures = json.loads(lines[-1])
        results[script.stem] = {**figures, "seconds": round(seconds, 1)}
        headline = ", ".join(
            f"{key}={value}"
            for key, value in figures.items()
            if "ratio" in key
            or key.endswith(("_vs_one", "_vs_indexer"))
            or key
            in (
                "pg_ops_per_s_32",
                "pg_lease_p99_ms_32",
                "pg_p95_ms_1m",
                "releases_per_s",
                "peak_mb_1m_batch",
                "us_per_header_coordinator",
                "edge_cores_per_coordinator_core",
            )
        )
        rows.append((script.stem, headline, seconds))
    (HERE / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"\n{results['machine']}, {results['when']}")
    width = max(len(name) for name, _, _ in rows) if rows else 10
    for name, headline, seconds in rows:
        print(f"{name:<{width}}  {seconds:6.0f} s  {headline}")


if __name__ == "__main__":
    main()
