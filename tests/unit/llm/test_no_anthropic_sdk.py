"""The server never imports the Anthropic SDK (about 66 MiB and a second of start-up): not with the app, not when a
Claude model is built, not when browser-use's ``Agent`` is constructed around it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import importlib, sys

import openbrowse.app
from browser_use import Agent, BrowserSession
from openbrowse.upstream.anthropic_import import without_anthropic_sdk
from openbrowse.config import Settings
from openbrowse.llm.catalog import resolve_model
from openbrowse.llm.factory import build_chat_model, provider_modules

def sdk_modules():
    return sorted(name for name in sys.modules if name == "anthropic" or name.startswith("anthropic."))

settings = Settings(ANTHROPIC_API_KEY="sk-ant-test")
for module in provider_modules(settings):
    importlib.import_module(module)
model = build_chat_model(resolve_model("claude-sonnet-5"), "high", settings)
print("after build:", sdk_modules())
session = BrowserSession(cdp_url="http://127.0.0.1:9")
with without_anthropic_sdk():
    Agent(task="t", llm=model, browser_session=session, use_judge=False, enable_signal_handler=False)
print("after agent:", sdk_modules())
from browser_use.llm.anthropic.chat import ChatAnthropic  # the real one, once the block is left
print("real class:", ChatAnthropic.__module__, isinstance(ChatAnthropic(model="claude-sonnet-5"), ChatAnthropic))
"""


def test_app_claude_model_and_agent_do_not_import_the_sdk(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ANONYMIZED_TELEMETRY": "false",
        "BROWSER_USE_VERSION_CHECK": "false",
        "BROWSER_USE_CLOUD_SYNC": "false",
        "BROWSER_USE_SETUP_LOGGING": "false",
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
        "TMPDIR": str(tmp_path),  # browser-use makes a downloads and an agent dir in the temp dir: keep them here
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "after build: []" in lines
    assert "after agent: []" in lines
    assert "real class: browser_use.llm.anthropic.chat True" in lines
