"""The book a fake LLM provider keeps: its scripts, the requests it recorded, its default reply and the errors
of reply callables.

The test's thread scripts and inspects while the server's thread records and chooses, so one lock guards it all;
waiting tests are woken whenever a request is recorded or finished.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from tests.fakes.llm_defaults import default_reply
from tests.fakes.llm_request import parse_request

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.fakes.llm_reply import ReplyLike
    from tests.fakes.llm_request import Api, LLMRequest
    from tests.fakes.llm_script import Script

log = logging.getLogger(__name__)


class Ledger:
    """Scripts and recorded requests of one fake provider, safe to use from any thread."""

    def __init__(self, default: ReplyLike | None = None) -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._requests: list[LLMRequest] = []
        self._scripts: list[Script] = []
        self._default: ReplyLike = default if default is not None else default_reply
        self.errors: list[BaseException] = []

    # -- the test's side -------------------------------------------------------------------------------------

    def add_script(self, script: Script) -> None:
        with self._lock:
            self._scripts.append(script)

    def set_default(self, reply: ReplyLike | None) -> None:
        with self._lock:
            self._default = reply if reply is not None else default_reply

    def reset(self) -> None:
        with self._lock:
            self._scripts.clear()
            self._requests.clear()
            self.errors.clear()
            self._default = default_reply

    @property
    def requests(self) -> list[LLMRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        return len(self._requests)

    def matching(self, needle: str) -> list[LLMRequest]:
        with self._lock:
            return [r for r in self._requests if needle in r.text]

    def wait_for(
        self, count: int, match: str | Callable[[LLMRequest], bool] | None, timeout: float
    ) -> list[LLMRequest]:
        def selected() -> list[LLMRequest]:
            if match is None:
                return list(self._requests)
            if isinstance(match, str):
                return [r for r in self._requests if match in r.text]
            return [r for r in self._requests if match(r)]

        with self._changed:
            if not self._changed.wait_for(lambda: len(selected()) >= count, timeout):
                raise TimeoutError(f"expected {count} request(s) matching {match!r}, got {len(selected())}")
            return selected()

    # -- the server's side -----------------------------------------------------------------------------------

    def record(self, api: Api, path: str, headers: dict[str, str], raw: bytes) -> LLMRequest:
        with self._changed:
            record = parse_request(len(self._requests) + 1, api, path, headers, raw)
            self._requests.append(record)
            self._changed.notify_all()
        return record

    def finish(self, record: LLMRequest, kind: str, status: int | None) -> None:
        with self._changed:
            record.reply_kind, record.status = kind, status
            self._changed.notify_all()
        log.debug("fake LLM: %s", record.summary())

    def choose(self, record: LLMRequest) -> ReplyLike:
        """The reply-like for ``record``: the first matching script's next entry (or its ``then``), else the
        default."""
        with self._lock:
            for script in self._scripts:
                if script.matches(record):
                    script.requests.append(record)
                    record.script = script.label
                    entry = script.take()
                    if entry is not None:
                        return entry
                    return script.then if script.then is not None else self._default
            return self._default

    def report_error(self, exc: BaseException) -> None:
        with self._lock:
            self.errors.append(exc)
