"""The server's reading of the script host's channel: bounded lines, every message validated.

The host runs model-written code, so what it sends is untrusted: a line longer than the bound is dropped (and
the call it carried, when its id can be read, is answered with an error), and anything that is not one of the
host's message types is refused before any of it is used.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from openbrowse.scripthost.wire import MAX_LINE, OUTPUT_CHUNK, OUTPUT_LIMIT

MAX_ID = 2**53
METHOD_LIMIT = 64
ERROR_LIMIT = 8000
_CALL_ID = re.compile(rb'^\{"type":"call","id":(\d{1,16})[,}]')


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Hello(_Message):
    type: Literal["hello"]
    token: str = Field(max_length=200)


class Call(_Message):
    type: Literal["call"]
    id: int = Field(ge=0, le=MAX_ID)
    method: str = Field(min_length=1, max_length=METHOD_LIMIT)
    args: dict[str, Any] = Field(default_factory=dict)


class Output(_Message):
    type: Literal["output"]
    id: int = Field(ge=0, le=MAX_ID)
    text: str = Field(max_length=OUTPUT_CHUNK)


class Done(_Message):
    type: Literal["done"]
    id: int = Field(ge=0, le=MAX_ID)
    stdout: str = Field(max_length=OUTPUT_LIMIT)
    stdoutChars: int = Field(ge=0)
    error: str | None = Field(default=None, max_length=ERROR_LIMIT)
    timedOut: bool = False


HostMessage = Annotated[Hello | Call | Output | Done, Field(discriminator="type")]
_MESSAGES: TypeAdapter[Hello | Call | Output | Done] = TypeAdapter(HostMessage)


class Refused:
    """A line that is not a valid message; ``call_id`` is set when it was a call the host waits an answer to."""

    __slots__ = ("call_id", "reason")

    def __init__(self, reason: str, call_id: int | None) -> None:
        self.reason = reason
        self.call_id = call_id


def parse(line: bytes) -> Hello | Call | Output | Done | Refused:
    try:
        return _MESSAGES.validate_json(line)
    except ValidationError as exc:
        problems = exc.errors()
        where = ".".join(str(part) for part in problems[0]["loc"]) if problems else ""
        reason = problems[0]["msg"] if problems else "invalid"
        return Refused(f"malformed message ({where}: {reason})", _call_id_of(line))


def _call_id_of(line: bytes) -> int | None:
    match = _CALL_ID.match(line[:64])
    if match:
        return int(match.group(1))
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if isinstance(message, dict) and message.get("type") == "call" and type(message.get("id")) is int:
        return int(message["id"])
    return None


async def read_line(reader: asyncio.StreamReader) -> bytes | Refused | None:
    """The next line (None at the end of the stream); a line over :data:`MAX_LINE` is drained and refused."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError:
        return None
    except asyncio.LimitOverrunError as exc:
        head = await reader.readexactly(exc.consumed)
        size = len(head)
        while True:
            try:
                size += len(await reader.readuntil(b"\n"))
                break
            except asyncio.LimitOverrunError as more:
                size += len(await reader.readexactly(more.consumed))
            except asyncio.IncompleteReadError:
                return None
        return Refused(f"the message is too large ({size} bytes; at most {MAX_LINE})", _call_id_of(head))


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"
