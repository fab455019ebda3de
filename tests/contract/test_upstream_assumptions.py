"""Each assumption ``openbrowse.upstream`` makes about third-party internals, checked against the installed versions.

When one of these fails after a bump, the module of ``openbrowse/upstream/`` named in the test says what we rely
on; fix that module (and only it), then update the version pins below.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_use import Agent, BrowserSession, Tools
from browser_use.agent.views import ActionResult, AgentOutput
from browser_use.browser.views import BrowserStateSummary
from browser_use.config import CONFIG
from browser_use.dom.views import SerializedDOMState
from browser_use.filesystem.file_system import FileSystem
from browser_use.llm.base import BaseChatModel
from pydantic import BaseModel

from openbrowse.bootstrap import _FIXED
from openbrowse.upstream.agent_output import is_agent_output
from openbrowse.upstream.file_system import register_text_file
from openbrowse.upstream.httpx_tls import share_httpx_default_context
from openbrowse.upstream.key_check import SKIP_KEY_CHECK_ENV
from openbrowse.upstream.registered_actions import (
    ActionFunction,
    ExecuteAction,
    register_action,
    registered_actions,
    wrap_action,
    wrap_execute_action,
)
from openbrowse.upstream.state_fetch import override_state_fetch, restore_state_fetch

VERIFIED_AGAINST = {"browser-use": "0.13.", "httpx": "0.28."}


@pytest.mark.parametrize(("package", "series"), sorted(VERIFIED_AGAINST.items()))
def test_installed_versions_are_the_ones_these_assumptions_were_checked_against(package: str, series: str) -> None:
    assert importlib.metadata.version(package).startswith(series), (
        f"{package} changed series: re-read the openbrowse/upstream modules that name it, then update this pin"
    )


# -- agent_output ----------------------------------------------------------------------------------------------------


def test_every_agent_output_variant_is_recognised_and_other_models_are_not() -> None:
    actions = Tools().registry.create_action_model()
    for build in (
        AgentOutput.type_with_custom_actions,
        AgentOutput.type_with_custom_actions_no_thinking,
        AgentOutput.type_with_custom_actions_flash_mode,
    ):
        assert is_agent_output(build(actions)), build.__name__

    class Extraction(BaseModel):
        text: str

    assert not is_agent_output(Extraction)
    assert not is_agent_output(None)


# -- anthropic_import ------------------------------------------------------------------------------------------------


def test_agent_imports_chat_anthropic_inside_its_constructor() -> None:
    source = inspect.getsource(Agent.__init__)
    assert "from browser_use.llm.anthropic.chat import ChatAnthropic" in source
    assert "isinstance(llm, ChatAnthropic)" in source or "isinstance(self.llm, ChatAnthropic)" in source


# -- key_check -------------------------------------------------------------------------------------------------------


def test_the_key_check_switch_is_read_from_the_environment_and_consulted_by_the_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SKIP_KEY_CHECK_ENV, _FIXED[SKIP_KEY_CHECK_ENV])
    assert CONFIG.SKIP_LLM_API_KEY_VERIFICATION is True
    monkeypatch.setenv(SKIP_KEY_CHECK_ENV, "false")
    assert CONFIG.SKIP_LLM_API_KEY_VERIFICATION is False
    assert "CONFIG.SKIP_LLM_API_KEY_VERIFICATION" in inspect.getsource(Agent._verify_and_setup_llm)
    assert BaseChatModel._verified_api_keys is False  # nothing of ours marks itself verified any more


# -- registered_actions ----------------------------------------------------------------------------------------------


class Shout(BaseModel):
    text: str


async def test_register_action_registers_under_the_function_name_and_returns_the_function() -> None:
    tools: Tools[Any] = Tools()

    async def shout(params: Shout) -> ActionResult:
        return ActionResult(extracted_content=params.text.upper())

    assert register_action(tools, "Say it loudly.", param_model=Shout)(shout) is shout
    assert registered_actions(tools)["shout"].param_model is Shout
    result = await tools.registry.execute_action("shout", {"text": "hi"})
    assert result.extracted_content == "HI"


async def test_a_wrapped_action_function_is_what_execute_action_runs() -> None:
    tools: Tools[Any] = Tools()

    @tools.action("Say it loudly.", param_model=Shout)
    async def shout(params: Shout) -> ActionResult:
        return ActionResult(extracted_content=params.text.upper())

    assert "shout" in registered_actions(tools)
    seen: list[str] = []

    def spy(original: ActionFunction) -> ActionFunction:
        async def spying(params: Any, **context: Any) -> Any:
            seen.append(params.text)
            return await original(params=params, **context)

        return spying

    assert wrap_action(tools, "shout", spy)
    assert not wrap_action(tools, "no_such_action", spy)
    result = await tools.registry.execute_action("shout", {"text": "hi"})
    assert (seen, result.extracted_content) == (["hi"], "HI")


async def test_every_action_call_goes_through_the_registrys_execute_action() -> None:
    assert "self.registry.execute_action(" in inspect.getsource(Tools.act)
    tools: Tools[Any] = Tools()

    @tools.action("Say it loudly.", param_model=Shout)
    async def shout(params: Shout) -> ActionResult:
        return ActionResult(extracted_content=params.text.upper())

    calls: list[tuple[str, object]] = []

    def spy(original: ExecuteAction) -> ExecuteAction:
        async def spying(action_name: str, params: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            calls.append((action_name, kwargs.get("sensitive_data")))
            return await original(action_name, params, *args, **kwargs)

        return spying

    wrap_execute_action(tools, spy)
    result = await tools.registry.execute_action("shout", {"text": "hi"}, sensitive_data={"k": "v"})
    assert (calls, result.extracted_content) == ([("shout", {"k": "v"})], "HI")


# -- state_fetch -----------------------------------------------------------------------------------------------------


async def test_an_instance_entry_shadows_the_state_fetch_of_that_session_only() -> None:
    assert "self.browser_session.get_browser_state_summary(" in inspect.getsource(Agent._prepare_context)
    session, other = BrowserSession(cdp_url="http://127.0.0.1:9"), BrowserSession(cdp_url="http://127.0.0.1:9")
    stub = BrowserStateSummary(
        dom_state=SerializedDOMState(_root=None, selector_map={}), url="about:blank", title="t", tabs=[]
    )

    async def fetch(*_args: Any, **_kwargs: Any) -> BrowserStateSummary:
        return stub

    override_state_fetch(session, fetch)
    assert await session.get_browser_state_summary(include_screenshot=False) is stub
    assert other.get_browser_state_summary.__func__ is BrowserSession.get_browser_state_summary  # type: ignore[attr-defined]
    restore_state_fetch(session)
    restore_state_fetch(session)  # idempotent
    assert session.get_browser_state_summary.__func__ is BrowserSession.get_browser_state_summary  # type: ignore[attr-defined]


# -- file_system -----------------------------------------------------------------------------------------------------


async def test_a_registered_text_file_is_readable_with_browser_uses_read_file(tmp_path: Path) -> None:
    file_system = FileSystem(tmp_path, create_default_files=False)
    assert register_text_file(file_system, "notes.md", "# found it")
    assert "# found it" in await file_system.read_file("notes.md")
    assert not register_text_file(file_system, "scan.pdf", "not text")
    assert not register_text_file(file_system, "archive.unknownext", "x")
    assert not register_text_file(file_system, "no_extension", "x")
    assert set(file_system.files) == {"notes.md"}


# -- httpx_tls -------------------------------------------------------------------------------------------------------


def _context(client: httpx.AsyncClient) -> ssl.SSLContext:
    context: ssl.SSLContext = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    return context


def test_httpx_transports_build_their_context_through_the_module_function() -> None:
    from httpx._transports import default as transport

    parameters = inspect.signature(getattr(transport, "create_ssl_context")).parameters  # noqa: B009
    assert {"verify", "cert", "trust_env"} <= set(parameters)
    assert "create_ssl_context(" in inspect.getsource(transport.AsyncHTTPTransport.__init__)


async def test_default_httpx_clients_share_a_context_custom_ones_keep_theirs() -> None:
    share_httpx_default_context()
    share_httpx_default_context()  # idempotent
    async with httpx.AsyncClient() as first, httpx.AsyncClient(timeout=3) as second:
        assert _context(first) is _context(second)
        assert _context(first).verify_mode is ssl.CERT_REQUIRED
    async with httpx.AsyncClient(verify=False) as insecure:
        assert _context(insecure).verify_mode is ssl.CERT_NONE
