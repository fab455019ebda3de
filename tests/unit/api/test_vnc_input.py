"""The live view's RFB reader (spec §21.5): per-connection input, fed byte streams as a viewer sends them."""

from __future__ import annotations

import struct

import pytest

from openbrowse.api.vnc_input import MAX_CUT_TEXT, RfbClientStream, RfbProtocolError, vnc_screen
from openbrowse.api.ws_bridge import CLOSE_POLICY, CloseConnection

HANDSHAKE = b"RFB 003.008\n" + b"\x01" + b"\x01"  # version, security None, ClientInit shared
PIXEL_FORMAT = b"\x00" + bytes(19)
ENCODINGS = b"\x02\x00" + struct.pack(">H", 3) + struct.pack(">iii", 0, 7, -223)
UPDATE = b"\x03\x01" + struct.pack(">HHHH", 0, 0, 1920, 1080)
KEY = b"\x04\x01\x00\x00" + struct.pack(">I", 0x61)
POINTER = b"\x05\x01" + struct.pack(">HH", 100, 200)
CUT = b"\x06\x00\x00\x00" + struct.pack(">I", 5) + b"hello"
EXTENDED_CUT = b"\x06\x00\x00\x00" + struct.pack(">i", -4) + b"\x01\x00\x00\x01"
QEMU_KEY = b"\xff\x00\x00\x01" + struct.pack(">II", 0x61, 30)
FENCE = b"\xf8\x00\x00\x00" + struct.pack(">I", 0) + b"\x02ab"
CONTINUOUS = b"\x96\x01" + struct.pack(">HHHH", 0, 0, 10, 10)
DESKTOP_SIZE = b"\xfb\x00" + struct.pack(">HH", 800, 600) + b"\x01\x00" + bytes(16)


class Switch:
    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.allowed


def stream(allowed: bool) -> tuple[RfbClientStream, Switch]:
    switch = Switch(allowed)
    return RfbClientStream(switch), switch


def test_handshake_and_viewing_messages_always_pass() -> None:
    reader, switch = stream(False)
    everything = HANDSHAKE + PIXEL_FORMAT + ENCODINGS + UPDATE + FENCE + CONTINUOUS
    assert reader.feed(everything) == everything
    assert switch.asked == 0


@pytest.mark.parametrize("message", [KEY, POINTER, CUT, EXTENDED_CUT, QEMU_KEY, DESKTOP_SIZE, b"\xfa\x00\x01\x02"])
def test_input_is_dropped_for_a_viewer_and_forwarded_for_a_controller(message: bytes) -> None:
    viewer, _ = stream(False)
    assert viewer.feed(HANDSHAKE + message + UPDATE) == HANDSHAKE + UPDATE
    assert viewer.dropped == 1
    controller, _ = stream(True)
    assert controller.feed(HANDSHAKE + message + UPDATE) == HANDSHAKE + message + UPDATE


def test_several_messages_in_one_frame_are_judged_one_by_one() -> None:
    reader, switch = stream(True)
    reader.feed(HANDSHAKE)
    frame = KEY + UPDATE + POINTER + KEY
    switch.allowed = False
    assert reader.feed(frame) == UPDATE
    assert switch.asked == 3 and reader.dropped == 3


def test_a_message_split_across_frames_is_held_until_it_is_whole() -> None:
    reader, _ = stream(True)
    data = HANDSHAKE + ENCODINGS + KEY + CUT + POINTER
    forwarded = b"".join(reader.feed(data[i : i + 1]) for i in range(len(data)))  # one byte per frame
    assert forwarded == data


def test_permission_is_asked_when_the_message_is_complete() -> None:
    reader, switch = stream(True)
    reader.feed(HANDSHAKE)
    assert reader.feed(KEY[:3]) == b""
    switch.allowed = False  # revoked (a resume) while the key event was in flight
    assert reader.feed(KEY[3:]) == b""
    switch.allowed = True
    assert reader.feed(POINTER) == POINTER


def test_split_lengths_in_variable_messages() -> None:
    reader, _ = stream(False)
    reader.feed(HANDSHAKE)
    assert reader.feed(ENCODINGS[:3]) == b""  # the count itself is split
    assert reader.feed(ENCODINGS[3:]) == ENCODINGS
    assert reader.feed(CUT[:6]) == b""
    assert reader.feed(CUT[6:] + UPDATE) == UPDATE  # the clipboard text is dropped whole, nothing leaks


def test_rfb_3_3_has_no_security_choice() -> None:
    reader, _ = stream(False)
    handshake = b"RFB 003.003\n" + b"\x01"
    assert reader.feed(handshake + KEY + UPDATE) == handshake + UPDATE


@pytest.mark.parametrize(
    "data",
    [
        HANDSHAKE + b"\x07" + bytes(10),  # unknown message type
        HANDSHAKE + b"\xff\x01" + bytes(10),  # QEMU audio
        b"RFB 003.008\n" + b"\x02",  # VNC authentication: the bridge cannot follow its challenge
        b"GET / HTTP/1.1\r\n",
        b"RFB 004.001\n",
        HANDSHAKE + b"\x06\x00\x00\x00" + struct.pack(">I", MAX_CUT_TEXT + 1),
    ],
)
def test_what_cannot_be_followed_raises(data: bytes) -> None:
    reader, _ = stream(True)
    with pytest.raises(RfbProtocolError):
        reader.feed(data)


def test_the_screen_closes_the_connection_on_unknown_types_and_text_frames() -> None:
    screen = vnc_screen(RfbClientStream(lambda: False))
    assert screen(HANDSHAKE).forward == HANDSHAKE
    assert screen(KEY).forward is None  # dropped: nothing to send upstream
    with pytest.raises(CloseConnection) as closed:
        screen(b"\x09")
    assert closed.value.code == CLOSE_POLICY
    with pytest.raises(CloseConnection):
        vnc_screen(RfbClientStream(lambda: True))("RFB 003.008\n")


def test_on_input_counts_only_what_went_through() -> None:
    seen: list[int] = []
    switch = Switch(True)
    reader = RfbClientStream(switch, on_input=lambda: seen.append(1))
    reader.feed(HANDSHAKE + KEY + UPDATE)
    switch.allowed = False
    reader.feed(POINTER)
    assert seen == [1]
