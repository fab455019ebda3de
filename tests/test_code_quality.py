"""The codebase stays formatted, lint-clean, strictly typed and inside its import layers (run by `make test`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SOURCES = ["openbrowse", "tests", "bench"]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param((str(BIN / "ruff"), "format", "--check", *SOURCES), id="ruff-format"),
        pytest.param((str(BIN / "ruff"), "check", *SOURCES), id="ruff-check"),
        pytest.param((str(BIN / "mypy"),), id="mypy-strict"),
        pytest.param((str(BIN / "lint-imports"),), id="import-layers"),
    ],
)
@pytest.mark.timeout(600)
def test_tool_passes(command: tuple[str, ...]) -> None:
    result = run(*command)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
