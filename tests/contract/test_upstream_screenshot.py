"""What ``openbrowse.upstream.screenshot_resize`` assumes of browser-use 0.13.x, checked against the installed one:
the resize it moves off the loop is upstream's, byte for byte, and it sits where the module says."""

from __future__ import annotations

import base64
import inspect
import io
from types import SimpleNamespace
from typing import Any, cast

from browser_use import Agent, BrowserSession
from browser_use.agent.prompts import AgentMessagePrompt
from PIL import Image

from openbrowse.upstream.screenshot_resize import READY, resize_for_model, resize_off_loop


def upstream_resize() -> Any:
    """browser-use's own ``_resize_screenshot`` (unwrapped if installed)."""
    method = AgentMessagePrompt._resize_screenshot
    return getattr(method, "__wrapped__", method)


def screenshot(width: int, height: int) -> str:
    image = Image.new("RGB", (width, height))
    for x in range(0, width, 7):
        for y in range(0, height, 5):
            image.putpixel((x, y), (x % 256, y % 256, (x * y) % 256))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def prompt(size: tuple[int, int] | None) -> AgentMessagePrompt:
    return cast("AgentMessagePrompt", SimpleNamespace(llm_screenshot_size=size))


def test_upstream_resizes_while_building_the_message_from_the_prompts_size() -> None:
    assert "self._resize_screenshot(" in inspect.getsource(AgentMessagePrompt.get_user_message)
    source = inspect.getsource(upstream_resize())
    assert "self.llm_screenshot_size" in source
    assert "LANCZOS" in source


def test_the_agent_reads_the_state_then_hands_the_size_to_the_session() -> None:
    assert "self.browser_session.get_browser_state_summary(" in inspect.getsource(Agent._prepare_context)
    assert "self.browser_session.llm_screenshot_size = llm_screenshot_size" in inspect.getsource(Agent.__init__)
    assert "llm_screenshot_size" in BrowserSession.model_fields
    assert inspect.iscoroutinefunction(BrowserSession.get_browser_state_summary)


def test_the_resize_off_the_loop_gives_upstreams_bytes() -> None:
    original = screenshot(320, 200)
    for size in ((200, 150), (320, 200), (640, 400)):
        assert resize_for_model(original, size) == upstream_resize()(prompt(size), original)
    assert resize_for_model("not a png", (200, 150)) == upstream_resize()(prompt((200, 150)), "not a png")


def test_a_prepared_screenshot_is_taken_as_it_is_and_others_go_upstreams_way() -> None:
    resize_off_loop()
    resize_off_loop()  # idempotent
    installed = AgentMessagePrompt._resize_screenshot
    assert installed is not upstream_resize()
    prepared, other = screenshot(300, 200), screenshot(310, 200)
    READY.put(prepared, (200, 150), "PREPARED")
    assert installed(prompt((200, 150)), prepared) == "PREPARED"
    assert installed(prompt((200, 150)), other) == upstream_resize()(prompt((200, 150)), other)
    assert installed(prompt(None), prepared) == prepared
