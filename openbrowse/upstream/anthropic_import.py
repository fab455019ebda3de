"""Building browser-use's ``Agent`` without importing the Anthropic SDK.

Upstream: browser-use 0.13.x, ``browser_use.agent.service.Agent.__init__``, which runs
``from browser_use.llm.anthropic.chat import ChatAnthropic`` only to ask ``isinstance(llm, ChatAnthropic)``
(picking a flash-mode prompt template we never use). That module imports the ``anthropic`` SDK: about 66 MiB of
server memory and over a second of CPU, on the first run of a server that otherwise never needs it (our Claude
client speaks HTTP itself). While the real module has not been imported, no object can be an instance of its
class; so for the duration of the construction a stand-in module in ``sys.modules``, whose ``ChatAnthropic``
nothing is an instance of, gives exactly the same answer. If anything did import the real module, it is left
alone and used.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator

CHAT_ANTHROPIC_MODULE = "browser_use.llm.anthropic.chat"


class _ChatAnthropicNotLoaded:
    """Stands for ``ChatAnthropic`` while its module is not loaded: nothing is an instance of it."""


_STAND_IN = types.ModuleType(
    CHAT_ANTHROPIC_MODULE, "Stand-in while the real module is not imported (upstream.anthropic_import)."
)
_STAND_IN.ChatAnthropic = _ChatAnthropicNotLoaded  # type: ignore[attr-defined]
_lock = threading.Lock()
_users = 0


def _real_module_loaded() -> bool:
    module = sys.modules.get(CHAT_ANTHROPIC_MODULE)
    return module is not None and module is not _STAND_IN


@contextlib.contextmanager
def without_anthropic_sdk() -> Iterator[None]:
    """Inside the block, importing ``browser_use.llm.anthropic.chat`` yields the stand-in (unless the real module
    is already loaded). Safe to nest and to use from several threads at once."""
    global _users
    with _lock:
        stand_in = not _real_module_loaded()
        if stand_in:
            _users += 1
            sys.modules[CHAT_ANTHROPIC_MODULE] = _STAND_IN
    try:
        yield
    finally:
        if stand_in:
            with _lock:
                _users -= 1
                if _users == 0 and sys.modules.get(CHAT_ANTHROPIC_MODULE) is _STAND_IN:
                    del sys.modules[CHAT_ANTHROPIC_MODULE]
