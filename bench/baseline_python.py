"""An interpreter that imports ``openbrowse`` from a baseline tree, for benchmarks against an older revision.

``PYTHONPATH`` is not enough: the script host starts as ``python -I -m openbrowse.scripthost``, and ``-I`` drops
``PYTHONPATH``, so it found the working tree's package (the virtualenv's editable install) while the baseline's
sandbox bound only the baseline's files: every script of the baseline failed to start and a benchmark timed a
failure. This makes a throwaway virtualenv holding a copy of the baseline's package, whose only ``.pth`` adds this
virtualenv's packages (so both trees run on the same libraries); the baseline is served with its interpreter. The
copy lives in the virtualenv, which the sandbox binds for the script host (``sys.prefix``), and the virtualenv is
opened to other users (``mkdtemp`` makes it 0700, which kept the script host's uid out just the same).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["baseline_python"]


@contextmanager
def baseline_python(source: Path) -> Iterator[str]:
    """The path of a ``python`` whose ``openbrowse`` is the one in ``source``; removed on exit."""
    folder = Path(tempfile.mkdtemp(prefix="openbrowse-baseline-venv-"))
    folder.chmod(0o755)  # mkdtemp's 0700 would keep the script host's uid out of it
    try:
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True)
        python = folder / "bin" / "python"
        found = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        )
        packages = Path(found.stdout.strip())
        shutil.copytree(source / "openbrowse", packages / "openbrowse")
        (packages / "baseline.pth").write_text(f"{sysconfig.get_path('purelib')}\n", encoding="utf-8")
        check = subprocess.run(
            [str(python), "-I", "-c", "import openbrowse; print(openbrowse.__file__)"],
            check=True,
            capture_output=True,
            text=True,
        )
        if not check.stdout.strip().startswith(str(packages)):
            raise RuntimeError(f"the baseline interpreter imports openbrowse from {check.stdout.strip()}")
        yield str(python)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
