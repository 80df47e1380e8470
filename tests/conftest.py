"""Shared fixtures. Tests never touch the network: the Hub is a local server (see hub_server.py)
and HF_HOME is a fresh temporary folder for every test."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).parent), str(ROOT / "scripts")]  # helpers; the local Hub (scripts/hubserver.py)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path_factory.mktemp("hf_home")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HOME", str(home))
    # the Hugging Face cache follows HF_HOME only when huggingface_hub is imported: one of its own per test
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    yield


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """Network allowed (to the local Hub server only): huggingface_hub's offline switch off."""
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run the real entry point (inspector.cli.commands.main) in-process and capture its exit code and
    output. CliRunner would report every exception as exit 1, hiding the exit-code contract."""
    from inspector.cli.commands import main

    def run(*args: str) -> Result:
        from inspector.render import streams

        capsys.readouterr()
        no_color = os.environ.get("NO_COLOR")
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        else:  # pragma: no cover - main always exits
            code = -1
        finally:  # --quiet and --no-color are the process's: a run in this process must not leave them set
            streams._quiet = False
            if no_color is None:
                os.environ.pop("NO_COLOR", None)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
