"""Running one script in the persistent namespace: compile with top-level ``await``, run, report the error.

This module is the host's pure core (no channel, no browser): tests drive it directly.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import linecache
import traceback
import types
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any


class AwaitAsyncioRun(ast.NodeTransformer):
    """``asyncio.run(coro)`` at top level or in an async function becomes ``await coro``: the script already runs
    inside the host's event loop, where a nested loop cannot start."""

    def __init__(self) -> None:
        self._sync_depth = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self._sync_depth += 1
        self.generic_visit(node)
        self._sync_depth -= 1
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self._sync_depth += 1
        self.generic_visit(node)
        self._sync_depth -= 1
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        depth, self._sync_depth = self._sync_depth, 0  # an async def inside a sync one may await again
        self.generic_visit(node)
        self._sync_depth = depth
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        is_run = (
            isinstance(func, ast.Attribute)
            and func.attr == "run"
            and isinstance(func.value, ast.Name)
            and func.value.id == "asyncio"
        )
        if is_run and node.args and not self._sync_depth:
            return ast.copy_location(ast.Await(value=node.args[0]), node)
        return node


def compile_script(source: str, filename: str) -> types.CodeType:
    """Compile with top-level ``await``; the source is registered so tracebacks show its lines."""
    tree = ast.fix_missing_locations(AwaitAsyncioRun().visit(ast.parse(source, filename)))
    code: types.CodeType = compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return code


@dataclass(frozen=True, slots=True)
class Ran:
    error: str | None = None
    timed_out: bool = False


class Namespace:
    """One session's variables across runs, and the ``asyncio.run`` calls a run left to await."""

    def __init__(self, helpers: dict[str, Any]) -> None:
        self.globals: dict[str, Any] = {"__name__": "__script__", "__builtins__": __builtins__, **helpers}
        self.globals["asyncio"] = self._asyncio_shim()
        self.pending: list[asyncio.Future[Any]] = []

    def bind(self, name: str, value: Any, present: bool) -> None:
        """Offer (or withdraw) a helper without overwriting a script's own variable of that name."""
        current = self.globals.get(name)
        if present and (current is None or getattr(current, "__openbrowse_helper__", False)):
            self.globals[name] = value
        elif not present and getattr(current, "__openbrowse_helper__", False):
            del self.globals[name]

    def _asyncio_shim(self) -> types.SimpleNamespace:
        shim = types.SimpleNamespace(**{name: getattr(asyncio, name) for name in asyncio.__all__})
        shim.run = self._schedule
        return shim

    def _schedule(self, coro: Coroutine[Any, Any, Any], **_: Any) -> None:
        """``asyncio.run`` from synchronous code: the run awaits the coroutine before it ends."""
        self.pending.append(asyncio.ensure_future(coro))

    async def run(self, source: str, filename: str, limit: float) -> Ran:
        try:
            code = compile_script(source, filename)
        except SyntaxError as exc:
            return Ran(f"SyntaxError: {exc.msg} (line {exc.lineno})")
        except ValueError as exc:  # a null byte in the source
            return Ran(f"SyntaxError: {exc}")
        try:
            async with asyncio.timeout(limit) as budget:
                await self._body(code)
        except TimeoutError as exc:
            if budget.expired():
                return Ran(timed_out=True)
            return Ran(describe(exc, filename))
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            return Ran(describe(exc, filename))
        finally:
            for task in self.pending:
                task.cancel()
            self.pending = []
        return Ran()

    async def _body(self, code: types.CodeType) -> None:
        result = eval(code, self.globals)  # the script host is the sandboxed process: this is where scripts run
        if inspect.iscoroutine(result):
            await result
        while self.pending:
            pending, self.pending = self.pending, []
            await asyncio.gather(*pending)


def describe(exc: BaseException, filename: str) -> str:
    """``Type: message (line N: source)``, the line being the script's own innermost frame."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    where = f" (line {frames[-1].lineno}: {frames[-1].line})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def pick_jsonld(blocks: list[Any], type_name: str) -> list[dict[str, Any]]:
    """Every JSON-LD object (top level, lists and ``@graph`` included) whose ``@type`` is ``type_name``."""
    found: list[dict[str, Any]] = []
    stack = list(blocks)
    while stack:
        item = stack.pop(0)
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            kind = item.get("@type")
            if kind == type_name or (isinstance(kind, list) and type_name in kind):
                found.append(item)
            stack.extend(v for k, v in item.items() if k == "@graph" or isinstance(v, dict | list))
    return found
