"""usenet-indexer installed without a checkout (issue 18): the wheel (``uv build``) installed as a tool
(``uv tool install``, into this test's temporary directory: nothing global is touched) runs ``demo``
from a directory that is not the checkout; without the ``s3`` extra it has no boto3, and an ``s3://``
store is refused at startup naming the extra; with it, the same demo keeps its spool in S3 (moto).

Dependencies are held to ``uv.lock`` (``uv export`` as constraints), so the install resolves what
``make sync`` put in uv's cache and needs the package index no more than ``uv sync`` does
(``UV_OFFLINE=1`` works once the cache holds them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.processes import settings_env
from tests.support.s3 import MotoServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
UV = REPO / "scripts" / "uv.sh"
PACKAGE = REPO / "src" / "usenet_indexer"
# Built or left by a checkout, never shipped: bytecode, the C source (compiled into the wheel when a
# compiler is there), an editable install's in-place library and its temporary files.
NOT_SHIPPED_SUFFIXES = {".pyc", ".c", ".so"}
DEMO = ["demo", "--exit-when-done", "--port=0", "--workers=2", "--scale=0.05", "--live-seconds=0"]
EXTRA_MESSAGE = [
    "the s3:// store (storage_url) needs boto3",
    "install usenet-indexer[s3]",
    "uv sync --extra s3",
    "pipx install 'usenet-indexer[s3]'",
]


def uv(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(UV), *args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, f"uv {' '.join(args)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without the project's: no virtualenv (``uv run`` sets one), no import path,
    no usenet-indexer settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT")
        and not k.startswith(("USENET_INDEXER_", "COORDINATOR_", "NODE_"))
    }
    env.update(extra)
    return env


@dataclass(frozen=True)
class Tool:
    """usenet-indexer installed by ``uv tool install`` in a directory of its own."""

    command: Path  # the usenet-indexer executable uv put in UV_TOOL_BIN_DIR
    python: Path  # the tool environment's interpreter

    def run(
        self, *args: str, cwd: Path, data_dir: Path, timeout: float = 180, **settings: object
    ) -> subprocess.CompletedProcess[str]:
        env = clean_env(**settings_env("", data_dir, **settings))
        del env["USENET_INDEXER_DATABASE_URL"]  # the default: a SQLite file in the data directory
        env["COLUMNS"] = "400"  # rich wraps error messages at the terminal's width, 80 without one
        return subprocess.run(
            [str(self.command), *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    uv("build", "--wheel", "--out-dir", str(out), str(REPO))
    (built,) = out.glob("usenet_indexer-*.whl")
    return built


def install(wheel: Path, root: Path, extra: str | None = None) -> Tool:
    """``uv tool install`` of the wheel (with ``extra``), its dependencies at uv.lock's versions."""
    root.mkdir(parents=True, exist_ok=True)
    constraints = root / "constraints.txt"
    export = ["export", "--locked", "--no-dev", "--no-hashes", "--no-emit-project", "--format"]
    uv(*export, "requirements-txt", *(["--extra", extra] if extra else []), "-o", str(constraints))
    tools, bin_dir = root / "tools", root / "bin"
    requirement = f"usenet-indexer[{extra}] @ {wheel.as_uri()}" if extra else str(wheel)
    uv(
        "tool",
        "install",
        "--python",
        sys.executable,  # the suite's Python: the wheel is tagged for it when the accelerator compiled
        "--constraints",
        str(constraints),
        requirement,
        cwd=root,
        env=clean_env(UV_TOOL_DIR=str(tools), UV_TOOL_BIN_DIR=str(bin_dir)),
    )
    tool = Tool(bin_dir / "usenet-indexer", tools / "usenet-indexer" / "bin" / "python")
    assert tool.command.is_file() and tool.python.is_file()
    # It runs the installed package, not the checkout's.
    where = subprocess.run(
        [str(tool.python), "-c", "import usenet_indexer; print(usenet_indexer.__file__)"],
        cwd=root,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(tools), where
    return tool


@pytest.fixture(scope="module")
def plain_tool(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Tool:
    return install(wheel, tmp_path_factory.mktemp("tool"))


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory outside the checkout."""
    directory = tmp_path / "elsewhere"
    directory.mkdir()
    assert not directory.is_relative_to(REPO)
    return directory


def has_module(tool: Tool, name: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([str(tool.python), "-c", code], env=clean_env(), check=False).returncode == 0


def demo_printed(output: str) -> dict[str, str]:
    """What the demo printed once done: its lines ``  web UI:  …``, ``  an NZB:  …`` and the others."""
    found = {}
    for line in output.splitlines():
        if match := re.search(r"  (web UI|newznab search|newznab API key|an NZB|probe):\s+(.+)$", line):
            found[match.group(1)] = match.group(2)
    return found


def check_demo(done: subprocess.CompletedProcess[str], data_dir: Path) -> None:
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    assert "The sample groups are indexed" in output, output[-5000:]
    found = demo_printed(output)
    assert found.keys() == {"web UI", "newznab search", "newznab API key", "an NZB", "probe"}, output[-5000:]
    assert re.match(r"http://127\.0\.0\.1:\d+/(\s|$)", found["web UI"]), found["web UI"]
    search = re.match(
        r"http://127\.0\.0\.1:\d+/api\?t=search&q=harbor&apikey=(\w+)\s+\((\d+) results\)",
        found["newznab search"],
    )
    assert search is not None, found["newznab search"]
    assert int(search.group(2)) > 0  # releases found through the newznab API
    assert found["newznab API key"].split()[0] == search.group(1)
    # The NZB it fetched through the API, written under the data directory.
    nzb = Path(found["an NZB"].split(" (")[0])
    assert nzb.is_file() and nzb.is_relative_to(data_dir / "demo" / "nzb")
    root = ET.parse(nzb).getroot()
    assert root.tag.endswith("nzb")
    assert root.findall(".//{*}segment"), nzb.read_text()[:2000]


def test_the_wheel_holds_every_data_file_and_boto3_only_as_the_extra(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
        extras = [
            line for line in archive.read(metadata).decode().splitlines() if line.startswith("Provides-Extra")
        ]
    shipped = {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix not in NOT_SHIPPED_SUFFIXES
        and not path.name.startswith("._speedups")
    }
    # Templates, SQL, migrations (and their template), the type stub: every file of the package.
    assert {p for p in shipped if not p.endswith(".py")} >= {
        "usenet_indexer/coordinator/http/templates/base.html",
        "usenet_indexer/db/sql/sqlite/schema.sql",
        "usenet_indexer/db/sql/postgresql/schema.sql",
        "usenet_indexer/db/migrations/script.py.mako",
    }
    assert shipped - names == set()
    assert extras == ["Provides-Extra: s3"]
    boto3 = [r for r in requires if r.startswith("boto3")]
    assert boto3 == ["boto3>=1.44.8; extra == 's3'"], requires


def test_the_installed_demo_runs_outside_the_checkout(
    plain_tool: Tool, elsewhere: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    done = plain_tool.run(*DEMO, cwd=elsewhere, data_dir=data_dir)
    check_demo(done, data_dir)
    assert (data_dir / "demo" / "blobs").is_dir()  # the local store: the spool went there
    assert not (elsewhere / "data").exists()  # everything under the data directory it was given


def test_installed_without_the_extra_an_s3_store_names_it(
    plain_tool: Tool, elsewhere: Path, tmp_path: Path
) -> None:
    assert not has_module(plain_tool, "boto3") and not has_module(plain_tool, "botocore")
    config = elsewhere / "usenet-indexer.toml"
    config.write_text('storage_url = "s3://indexer-blobs/prod"\n')
    done = plain_tool.run(
        "--config", str(config), "groups", "list", cwd=elsewhere, data_dir=tmp_path / "data"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    # A settings error naming the extra, on one line: not an import failing, not a traceback.
    assert said.startswith("settings: the s3:// store (storage_url) needs boto3"), said[-3000:]
    assert "Traceback" not in said and "ValidationError" not in said, said[-3000:]
    for words in EXTRA_MESSAGE:
        assert words in said, said[-3000:]
    assert "ModuleNotFoundError" not in said and "No module named" not in said, said[-3000:]
    assert not (tmp_path / "data").exists()  # refused before anything was made


def test_installed_with_the_s3_extra_the_demo_stores_in_s3(
    wheel: Path, moto_server: MotoServer, tmp_path: Path, elsewhere: Path
) -> None:
    tool = install(wheel, tmp_path / "tool-s3", extra="s3")
    assert has_module(tool, "boto3")
    data_dir = tmp_path / "data"
    s3 = moto_server.settings(moto_server.new_bucket(), prefix="demo")
    done = tool.run(*DEMO, cwd=elsewhere, data_dir=data_dir, **s3)
    check_demo(done, data_dir)
    assert not (data_dir / "demo" / "blobs").exists()  # the spool was in the bucket, not here
