"""Per-connection input for the live view (spec §21.5): the server's VNC bridge drops a viewer's input.

x11vnc cannot tell one viewer from another behind websockify, so the gate is here: :class:`RfbClientStream`
reads the client→server half of an RFB 3.3/3.7/3.8 session message by message and forwards input (keys,
pointer, clipboard, and the few other messages that change the remote screen) only while ``may_input()`` says
so, asked again for every such message. Everything else (pixel format, encodings, update requests) always
passes, so a view-only viewer keeps its picture.

WebSocket frames do not follow message boundaries: a frame may carry several messages or part of one, so bytes
are buffered until a message is complete and only whole messages are forwarded. A message type this parser
does not know, a security type other than None, or a text frame ends the connection: guessing a length would
let the rest of the stream be read out of step, and a smuggled key event with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from openbrowse.api.ws_bridge import CLOSE_POLICY, CloseConnection

__all__ = [
    "INPUT_TYPES",
    "MAX_CUT_TEXT",
    "RfbClientStream",
    "RfbForward",
    "RfbProtocolError",
    "vnc_screen",
]

MAX_CUT_TEXT = 1 << 20
"""Largest clipboard text a viewer may send (noVNC sends what the person pasted)."""
SECURITY_NONE = 1
VERSION_LENGTH = 12

SET_PIXEL_FORMAT = 0
SET_ENCODINGS = 2
UPDATE_REQUEST = 3
KEY_EVENT = 4
POINTER_EVENT = 5
CLIENT_CUT_TEXT = 6
CONTINUOUS_UPDATES = 150
CLIENT_FENCE = 248
XVP = 250
SET_DESKTOP_SIZE = 251
QEMU = 255

INPUT_TYPES = frozenset({KEY_EVENT, POINTER_EVENT, CLIENT_CUT_TEXT, XVP, SET_DESKTOP_SIZE, QEMU})
"""Messages that act on the remote desktop: keys, pointer, clipboard, xvp power operations, screen resizes and
QEMU's extended key event. Only a connection allowed to control may send them."""
_FIXED_LENGTHS = {
    SET_PIXEL_FORMAT: 20,
    UPDATE_REQUEST: 10,
    KEY_EVENT: 8,
    POINTER_EVENT: 6,
    CONTINUOUS_UPDATES: 10,
    XVP: 4,
}


class RfbProtocolError(Exception):
    """The client stream is not RFB this bridge can follow; the connection must end."""


@dataclass(frozen=True, slots=True)
class RfbForward:
    """What the bridge sends upstream for one client frame (None: nothing yet); never a reply to the client."""

    forward: bytes | None
    reply: None = None


class RfbClientStream:
    """The client→server half of one RFB connection, fed frame by frame.

    ``may_input`` is asked once per input message, when the message is complete; a False drops it.
    ``on_input`` (optional) is called for every input message that is let through.
    """

    def __init__(self, may_input: Callable[[], bool], on_input: Callable[[], None] | None = None) -> None:
        self._may_input = may_input
        self._on_input = on_input
        self._buffer = bytearray()
        self._phase = "version"
        self._version = (3, 8)
        self.dropped = 0

    def feed(self, data: bytes) -> bytes:
        """The whole messages of the stream so far that may be forwarded, in order; raises
        :class:`RfbProtocolError` on anything this parser cannot follow."""
        self._buffer += data
        out = bytearray()
        while self._buffer:
            length = self._next_length()
            if length is None or len(self._buffer) < length:
                break
            message = bytes(self._buffer[:length])
            del self._buffer[:length]
            if self._admit(message):
                out += message
        return bytes(out)

    # -- framing -----------------------------------------------------------------------------------------------
    def _next_length(self) -> int | None:
        """The byte length of the next message, or None if more bytes are needed to know it."""
        if self._phase == "version":
            return VERSION_LENGTH
        if self._phase == "security":
            return 1
        if self._phase == "init":
            return 1
        return _message_length(self._buffer)

    def _admit(self, message: bytes) -> bool:
        """Advance the handshake, or judge one normal message; True to forward it."""
        if self._phase == "version":
            self._version = _parse_version(message)
            self._phase = "init" if self._version == (3, 3) else "security"
            return True
        if self._phase == "security":
            if message[0] != SECURITY_NONE:
                raise RfbProtocolError(f"security type {message[0]} is not supported by the bridge")
            self._phase = "init"
            return True
        if self._phase == "init":
            self._phase = "messages"
            return True
        if message[0] not in INPUT_TYPES:
            return True
        if not self._may_input():
            self.dropped += 1
            return False
        if self._on_input is not None:
            self._on_input()
        return True


def _parse_version(message: bytes) -> tuple[int, int]:
    if not (message.startswith(b"RFB ") and message.endswith(b"\n") and message[7:8] == b"."):
        raise RfbProtocolError("the client did not send an RFB protocol version")
    try:
        major, minor = int(message[4:7]), int(message[8:11])
    except ValueError as exc:
        raise RfbProtocolError("the client sent an unreadable RFB protocol version") from exc
    if major != 3 or minor < 3:
        raise RfbProtocolError(f"RFB version {major}.{minor} is not supported by the bridge")
    # what servers make of a client's odd minor versions (RFC 6143 §7.1.1): below 7 is 3.3, 7 is 3.7, above 3.8
    return (3, 3) if minor < 7 else (3, 7) if minor == 7 else (3, 8)


def _message_length(buffer: bytearray) -> int | None:
    kind = buffer[0]
    if kind in _FIXED_LENGTHS:
        return _FIXED_LENGTHS[kind]
    if kind == SET_ENCODINGS:
        return None if len(buffer) < 4 else 4 + 4 * int.from_bytes(buffer[2:4], "big")
    if kind == CLIENT_CUT_TEXT:
        if len(buffer) < 8:
            return None
        length = int.from_bytes(buffer[4:8], "big", signed=True)  # negative: the extended clipboard format
        if abs(length) > MAX_CUT_TEXT:
            raise RfbProtocolError("clipboard text is too long")
        return 8 + abs(length)
    if kind == CLIENT_FENCE:
        return None if len(buffer) < 9 else 9 + buffer[8]
    if kind == SET_DESKTOP_SIZE:
        return None if len(buffer) < 8 else 8 + 16 * buffer[6]
    if kind == QEMU:
        if len(buffer) < 2:
            return None
        if buffer[1] != 0:
            raise RfbProtocolError(f"QEMU client message {buffer[1]} is not supported by the bridge")
        return 12
    raise RfbProtocolError(f"unknown RFB client message type {kind}")


def vnc_screen(stream: RfbClientStream) -> Callable[[bytes | str], RfbForward]:
    """A ``ws_bridge`` screen around ``stream``: binary frames only; a stream it cannot follow closes (1008)."""

    def screen(message: bytes | str) -> RfbForward:
        if isinstance(message, str):
            raise CloseConnection(CLOSE_POLICY, "The live view takes binary frames only")
        try:
            forward = stream.feed(message)
        except RfbProtocolError as exc:
            raise CloseConnection(CLOSE_POLICY, f"Not a VNC stream the server can follow: {exc}") from exc
        return RfbForward(forward or None)

    return screen
