"""The script host's pure core: compiling with top-level await, the persistent namespace, errors, output."""

from __future__ import annotations

import ast

from openbrowse.scripthost.capture import Capture
from openbrowse.scripthost.helpers import STORE_HELPERS, helper, store_helpers
from openbrowse.scripthost.namespace import AwaitAsyncioRun, Namespace, pick_jsonld

FILE = "scripts/t.py"


def rewritten(source: str) -> str:
    return ast.unparse(AwaitAsyncioRun().visit(ast.parse(source)))


def test_asyncio_run_becomes_await_where_await_is_allowed() -> None:
    assert rewritten("asyncio.run(main())") == "await main()"
    assert "await go()" in rewritten("async def f():\n    asyncio.run(go())")
    assert "asyncio.run(go())" in rewritten("def f():\n    asyncio.run(go())")
    assert "await go()" in rewritten("def f():\n    async def g():\n        asyncio.run(go())")


async def test_variables_persist_and_top_level_await_works() -> None:
    space = Namespace({})
    assert (await space.run("import asyncio\nawait asyncio.sleep(0)\ncount = 2", FILE, 5)).error is None
    assert (await space.run("count *= 21", FILE, 5)).error is None
    assert space.globals["count"] == 42


async def test_asyncio_run_from_sync_code_is_awaited_before_the_run_ends() -> None:
    space = Namespace({})
    source = "seen = []\nasync def work():\n    seen.append(1)\ndef start():\n    asyncio.run(work())\nstart()"
    assert (await space.run(source, FILE, 5)).error is None
    assert space.globals["seen"] == [1] and space.pending == []


async def test_errors_name_the_scripts_own_line() -> None:
    space = Namespace({})
    ran = await space.run("a = 1\n{}['missing']\n", FILE, 5)
    assert ran.error == "KeyError: 'missing' (line 2: {}['missing'])"
    assert (await space.run("def broken(:\n", FILE, 5)).error == "SyntaxError: invalid syntax (line 1)"
    assert (await space.run("x = '\0'", FILE, 5)).error is not None


async def test_a_script_awaiting_past_its_limit_times_out_but_its_own_timeout_is_an_error() -> None:
    space = Namespace({})
    late = await space.run("import asyncio\nstarted = True\nawait asyncio.sleep(30)", FILE, 0.05)
    assert late.timed_out and late.error is None and space.globals["started"] is True
    own = await space.run("await asyncio.wait_for(asyncio.sleep(30), 0.01)", FILE, 5)
    assert not own.timed_out and own.error is not None and own.error.startswith("TimeoutError")


async def test_store_helpers_are_offered_only_with_a_store_and_never_clobber_a_script_variable() -> None:
    space = Namespace({})
    offered = store_helpers(calls=None)  # type: ignore[arg-type]
    assert sorted(offered) == sorted(STORE_HELPERS)
    for name, function in offered.items():
        space.bind(name, function, present=True)
    assert space.globals["add_item"] is offered["add_item"]
    await space.run("coverage = 'my own'", FILE, 5)
    for name, function in offered.items():
        space.bind(name, function, present=False)
    assert "add_item" not in space.globals and space.globals["coverage"] == "my own"
    assert getattr(helper(lambda: None), "__openbrowse_helper__", False)


def test_pick_jsonld_finds_nested_and_graph_objects() -> None:
    blocks = [{"@graph": [{"@type": "JobPosting", "title": "A"}, {"@type": ["Thing", "JobPosting"], "title": "B"}]}]
    assert [o["title"] for o in pick_jsonld(blocks, "JobPosting")] == ["A", "B"]


def test_output_past_the_limit_is_counted_not_kept() -> None:
    capture = Capture(limit=10)
    capture.write("0123456789abcdef")
    capture.write("more")
    assert capture.take() == "0123456789" and capture.total == 20 and capture.take() == ""
