"""Turning a successful agent turn into a :class:`~.script.CachedScript` (spec §27.3).

The steps are the browser actions of the turn that worked (no error in their result), in order: ``navigate``
(its URL), ``click``, ``input`` and ``select_dropdown`` (the element's XPath as browser-use recorded it, and the
typed or chosen text). Parameter values become placeholders wherever they were typed or used in a URL. Actions
that only read (scrolling, extraction, our reading tools, files) need no replay; an action that changes a page in
a way a replay cannot repeat (a script of its own, JavaScript, keys, tabs) makes the turn uncacheable.

The output's sources are found on the final page: its elements' texts are read over CDP (the page's DOM is
parsed here, no page code runs in this process) and matched against the output's strings.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from browser_use import BrowserSession
from browser_use.agent.views import AgentHistory

from openbrowse.agent.cache.script import Step, with_placeholders

__all__ = ["UNCACHEABLE", "Uncacheable", "page_texts", "steps_of"]

logger = logging.getLogger(__name__)

READ_ONLY = frozenset(
    {
        "done", "scroll", "extract", "find_text", "search_page", "find_elements", "screenshot", "wait",
        "read_file", "write_file", "replace_file", "dropdown_options", "find_links", "read_pages", "remember",
        "recall", "http_fetch", "set_field", "add_item", "add_items", "update_item", "update_items", "mark_absent",
        "remove_items", "read_output", "coverage", "search_output", "switch",
    }
)  # fmt: skip
UNCACHEABLE = "the run used actions a script cannot repeat"
MAX_TEXTS = 4000
TEXTS_JS = """(() => {
  const xpathOf = (el) => {
    const parts = [];
    for (let node = el; node && node.nodeType === 1; node = node.parentNode) {
      let index = 1;
      for (let sib = node.previousElementSibling; sib; sib = sib.previousElementSibling) {
        if (sib.nodeName === node.nodeName) index++;
      }
      parts.unshift(node.nodeName.toLowerCase() + '[' + index + ']');
    }
    return '/' + parts.join('/');
  };
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (out.length >= LIMIT) break;
    if (['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE'].includes(el.nodeName)) continue;
    const text = (el.innerText || '').trim();
    if (text && text.length <= 500) out.push([xpathOf(el), text]);
  }
  return out;
})()""".replace("LIMIT", str(MAX_TEXTS))


class Uncacheable(Exception):
    """The turn did something a script cannot repeat; the message says what."""


def _label(element: Any) -> str:
    attributes = getattr(element, "attributes", None) or {}
    for key in ("aria-label", "title", "name", "placeholder", "id"):
        if attributes.get(key):
            return f"{getattr(element, 'node_name', 'element').lower()} '{attributes[key]}'"
    return str(getattr(element, "node_name", "element")).lower()


def _xpath(element: Any) -> str:
    path = str(getattr(element, "x_path", "") or "")
    return path if path.startswith("/") else f"/{path}"


def steps_of(items: Sequence[AgentHistory], values: Sequence[str]) -> list[Step]:
    """The replayable browser steps of a turn's history items; :class:`Uncacheable` when one cannot be replayed."""
    steps: list[Step] = []
    for position, item in enumerate(items):
        if item.model_output is None:
            continue
        next_url = items[position + 1].state.url if position + 1 < len(items) else None
        elements = list(item.state.interacted_element or [])
        for index, action in enumerate(item.model_output.action):
            result = item.result[index] if index < len(item.result) else None
            if result is None or result.error:
                continue
            dumped = action.model_dump(exclude_unset=True)
            name, params = next(iter(dumped.items())) if dumped else ("", {})
            params = params or {}
            element = elements[index] if index < len(elements) else None
            navigates = next_url is not None and next_url != item.state.url and index == len(item.result) - 1
            if name == "navigate":
                step = Step("navigate", url=with_placeholders(str(params.get("url", "")), values))
                if not steps or steps[-1] != step:  # the task's start URL opened twice is one step
                    steps.append(step)
            elif name in {"click", "input", "select_dropdown"} and element is not None:
                kind = {"click": "click", "input": "type", "select_dropdown": "select"}[name]
                text = with_placeholders(str(params.get("text", "")), values) if kind != "click" else ""
                steps.append(Step(kind, xpath=_xpath(element), text=text, label=_label(element), navigates=navigates))
            elif name not in READ_ONLY:
                raise Uncacheable(f"{UNCACHEABLE} ({name})")
    return steps


async def page_texts(browser: BrowserSession) -> list[tuple[str, str]]:
    """``(xpath, text)`` of the focused page's elements, in document order (empty when it cannot be read)."""
    try:
        await browser.start()  # the agent's run may have let go of the browser (it stays up in its slot)
        session = await browser.get_or_create_cdp_session()
        reply = await session.cdp_client.send.Runtime.evaluate(
            params={"expression": TEXTS_JS, "returnByValue": True}, session_id=session.session_id
        )
        value = reply.get("result", {}).get("value")
    except Exception as exc:  # a page that went away: nothing to match
        logger.info("Could not read the final page for the cached script: %s", exc)
        return []
    if not isinstance(value, list):
        return []
    return [(str(pair[0]), str(pair[1])) for pair in value if isinstance(pair, list) and len(pair) == 2]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
