"""The server process executes no model-written or page code (spec §24.1): no ``eval``/``exec``/``compile(...,
"exec")`` anywhere in ``openbrowse/`` except the script host, which runs inside the slot's sandbox."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "openbrowse"
SANDBOXED = PACKAGE / "scripthost"
_CALL = re.compile(r"(?<![.\w])(eval|exec)\s*\(")


def server_sources() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if not p.is_relative_to(SANDBOXED)]


def executions(path: Path, root: Path = REPO) -> list[str]:
    text = path.read_text("utf-8")
    where = path.relative_to(root)
    found = [f"{where}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in _CALL.finditer(text)]
    for node in ast.walk(ast.parse(text, str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if name in {"eval", "exec"} and not isinstance(node.func, ast.Attribute):
            found.append(f"{where}:{node.lineno}: {name}(...)")
        if name == "compile" and isinstance(node.func, ast.Name):
            modes = [*node.args[2:3], *(k.value for k in node.keywords if k.arg == "mode")]
            if not modes or any(not isinstance(m, ast.Constant) or m.value == "exec" for m in modes):
                found.append(f"{where}:{node.lineno}: compile(..., 'exec')")
        if isinstance(node.func, ast.Attribute) and node.func.attr in {"eval", "exec"}:
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "builtins":
                found.append(f"{where}:{node.lineno}: builtins.{node.func.attr}(...)")
    return found


def test_the_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import builtins\nx = eval('1')\nexec('y = 1')\ncode = compile('1', 'f', 'exec')\nbuiltins.exec('z = 2')\n"
        "page.evaluate('1')\nre.compile('x')\n",
        "utf-8",
    )
    found = executions(planted, tmp_path)
    assert not any(":6:" in f or ":7:" in f for f in found), found
    assert any(":2:" in f for f in found)
    assert any(":3:" in f for f in found) and any(":4:" in f for f in found) and any(":5:" in f for f in found)


def test_the_server_process_never_evaluates_or_executes_code() -> None:
    sources = server_sources()
    assert len(sources) > 100 and not (PACKAGE / "agent" / "sandbox.py").exists()
    found = [hit for path in sources for hit in executions(path)]
    assert found == [], "\n".join(found)


def test_the_script_host_is_where_scripts_run() -> None:
    namespace = (SANDBOXED / "namespace.py").read_text("utf-8")
    assert "eval(code, self.globals)" in namespace and "PyCF_ALLOW_TOP_LEVEL_AWAIT" in namespace
