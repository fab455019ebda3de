"""Recordings of a slot's display (spec §22.1) on a real server with real slots, ffmpeg and the fake model: a recorded
turn leaves one MP4 that ffprobe reads with the turn's duration and the screen's size, listed in ``recordingUrls``
(and found by the SDK's ``wait_for_recording``) only once final, served by its signed URL; a recorder SIGKILLed
mid-run, a stop, a maintenance shutdown and a server crash still leave a readable, listed file; without ffmpeg the
run goes on and a ``system`` event says why; a raw browser gets its ``recordingUrl`` after stop; the dashboard
offers a new recording and its step marks seek the video in a real browser."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psutil
import pytest
from browser_use_sdk.v3 import AsyncBrowserUse
from playwright.async_api import async_playwright

from tests.conftest import StartServer
from tests.e2e.agent_support import TERMINAL, data_of, messages, session_files, token, wait_until_status
from tests.e2e.servers import running_server, server_fixture
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

MODEL = "claude-sonnet-5"
HELD_SECONDS = 6.0
NAME = re.compile(r"^turn-(\d+)-(\d{13})\.mp4$")


server = server_fixture(lambda fake: fake.env(), slots=2)


def probe(path: Path) -> dict[str, Any]:
    """What ffprobe reads of ``path``: the video stream's size and the container's duration."""
    result = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height,codec_name",
         "-show_entries", "format=duration", "-of", "json", str(path)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def recorders(server: ServerProcess) -> list[psutil.Process]:
    """The server's ffmpeg processes (a child that exits while they are listed is left out)."""
    found = []
    for proc in server.children():
        try:
            if proc.name() == "ffmpeg":
                found.append(proc)
        except psutil.NoSuchProcess:
            continue
    return found


def start_held_turn(server: ServerProcess, fake: FakeProvider, marker: str, **body: Any) -> tuple[dict[str, Any], Gate]:
    gate = Gate()
    fake.script(marker, [structured(done("Recorded."), gate=gate)], when=lambda r: r.is_agent_step)
    response = loopback.post(
        f"{server.v3}/sessions", json={"task": f"{marker} Say hi.", "model": MODEL, **body}, timeout=30
    )
    assert response.status_code == 200, response.text
    assert gate.wait_entered(90), server.log()[-3000:]
    return response.json(), gate


def seconds_on_disk(folder: Path) -> float:
    """How many seconds of video the recording being written in ``folder`` holds in complete fragments (0 before
    the first): ffprobe reads a fragmented MP4's ``.part`` as far as it goes."""
    partial = sorted(folder.glob("*.mp4.part")) if folder.is_dir() else []
    if not partial:
        return 0.0
    result = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(partial[0])],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    try:
        return float(json.loads(result.stdout)["format"]["duration"])
    except (ValueError, KeyError, TypeError):
        return 0.0  # no complete fragment yet


def wait_for_video(folder: Path, seconds: float) -> None:
    """Wait until the recording being written in ``folder`` holds ``seconds`` of video on disk."""
    wait_until(lambda: seconds_on_disk(folder) >= seconds, 60, interval=0.25, what=f"{seconds} s of video on disk")


def recording_files(server: ServerProcess, session_id: str) -> list[Path]:
    folder = session_files(server, session_id) / "recordings"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def fetch(url: str) -> bytes:
    """The recording behind a signed URL, without the API key (the signature is the credential)."""
    response = loopback.get(url, timeout=30)
    assert response.status_code == 200, response.text
    return response.content


async def test_a_recorded_turn_gives_one_readable_mp4_listed_once_final(
    server: ServerProcess, fake: FakeProvider, sdk: Callable[[ServerProcess], AsyncBrowserUse]
) -> None:
    session, gate = start_held_turn(server, fake, token("REC"), enableRecording=True)
    try:
        wait_until(lambda: len(recorders(server)) == 1, 30, what="a recorder to start")
        running = loopback.get(f"{server.v3}/sessions/{session['id']}", timeout=30).json()
        assert running["recordingUrls"] == []  # still being written: not listed
        partial = recording_files(server, session["id"])
        assert [p.name.endswith(".mp4.part") for p in partial] == [True]
        # the turn's length is what the recording must show
        wait_for_video(session_files(server, session["id"]) / "recordings", HELD_SECONDS)
    finally:
        gate.open()
    ended = wait_until_status(server, session["id"], TERMINAL, timeout=60)
    ended_at = time.time()
    assert ended["isTaskSuccessful"] is True, ended

    urls: list[str] = await sdk(server).sessions.wait_for_recording(session["id"], timeout=10, interval=0.5)
    assert len(urls) == 1 and "/files/recordings/turn-1-" in urls[0] and "sig=" in urls[0], urls
    files = recording_files(server, session["id"])
    assert [f.name for f in files] == [urlparse(urls[0]).path.rsplit("/", 1)[-1]]
    parts = NAME.match(files[0].name)
    assert parts, files
    started_ms = int(parts.group(2))
    assert fetch(urls[0]) == files[0].read_bytes()

    info = probe(files[0])
    stream = info["streams"][0]
    assert (stream["codec_name"], stream["width"], stream["height"]) == ("h264", 1920, 1080), info
    # the turn was held until HELD_SECONDS of video were on disk, and the video cannot outlast the time from its
    # first frame (the stamp in its final name) to the turn's end (a loaded machine drops frames, never adds them)
    spanned = ended_at - started_ms / 1000
    assert HELD_SECONDS <= float(info["format"]["duration"]) <= spanned + 2.0, (info, spanned)
    assert not recorders(server)  # stopped with the turn

    # the dashboard plays it where the live view was, with the turn's steps as marks that seek the video
    page = loopback.get(f"{server.base_url}/sessions/{session['id']}", timeout=30)
    assert page.status_code == 200, page.text
    assert f"/v3/sessions/{session['id']}/files/recordings/{files[0].name}?expires=" in page.text
    marks = re.findall(r'data-seek="([\d.]+)"><time>[\d:]+</time> ([^<]+)</a>', page.text)
    labels = {label.split(":")[0]: float(seconds) for seconds, label in marks}
    assert set(labels) >= {"Task", "Step 1", "Done"}, page.text
    assert labels["Task"] == 0.0 and labels["Step 1"] < 2.0 and labels["Done"] >= HELD_SECONDS - 1, labels
    assert loopback.get(f"{server.base_url}/ui/static/recordings.js", timeout=30).status_code == 200


async def test_a_recorder_killed_mid_run_still_leaves_a_readable_file(
    server: ServerProcess, fake: FakeProvider
) -> None:
    session, gate = start_held_turn(server, fake, token("REC-KILL"), enableRecording=True)
    try:
        wait_until(lambda: len(recorders(server)) == 1, 30, what="a recorder to start")
        wait_for_video(session_files(server, session["id"]) / "recordings", 2.0)  # a fragment on disk
        victim = recorders(server)[0]
        assert victim.uids().real != os.getuid()  # ffmpeg runs as the slot's sandbox uid, not as the server
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
    finally:
        gate.open()
    ended = wait_until_status(server, session["id"], TERMINAL, timeout=60)
    assert ended["isTaskSuccessful"] is True, ended
    listed = loopback.get(f"{server.v3}/sessions/{session['id']}", timeout=30).json()["recordingUrls"]
    assert len(listed) == 1, listed
    files = recording_files(server, session["id"])
    assert len(files) == 1 and NAME.match(files[0].name), files
    info = probe(files[0])
    assert info["streams"][0]["width"] == 1920
    assert float(info["format"]["duration"]) >= 2.0, info  # the fragment on disk before the kill


def test_sessions_without_enable_recording_record_nothing(server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("REC-OFF")
    fake.script(marker, [done("Not recorded.")], when=lambda r: r.is_agent_step)
    session = loopback.post(f"{server.v3}/sessions", json={"task": f"{marker} Say hi.", "model": MODEL}, timeout=30)
    ended = wait_until_status(server, session.json()["id"], TERMINAL, timeout=60)
    assert ended["isTaskSuccessful"] is True and ended["recordingUrls"] == []
    assert recording_files(server, ended["id"]) == []


def test_without_ffmpeg_the_run_goes_on_and_the_feed_says_why(tmp_path: Path, fake: FakeProvider) -> None:
    # RECORDING_DEFAULT=1 records every session; the ffmpeg it names does not exist
    with running_server(
        tmp_path / "no-ffmpeg-home", {**fake.env(), "RECORDING_DEFAULT": "1", "RECORDING_FFMPEG": "/nonexistent/ffmpeg"}
    ) as process:
        marker = token("REC-NOFF")
        fake.script(marker, [done("Ran anyway.")], when=lambda r: r.is_agent_step)
        session = loopback.post(
            f"{process.v3}/sessions", json={"task": f"{marker} Say hi.", "model": MODEL}, timeout=30
        )
        ended = wait_until_status(process, session.json()["id"], TERMINAL, timeout=90)
        assert ended["isTaskSuccessful"] is True and ended["output"] == "Ran anyway.", ended
        assert ended["recordingUrls"] == []
        feed = messages(process, ended["id"])
        recording = {"category": "system", "action": "recording"}
        notes = [m for m in feed if m["type"] == "event" and data_of(m) == recording]
        assert len(notes) == 1 and "ffmpeg" in notes[0]["summary"] and "No recording" in notes[0]["summary"], feed


async def test_a_raw_browser_with_enable_recording_has_a_recording_url_after_stop(
    server: ServerProcess, sdk: Callable[[ServerProcess], AsyncBrowserUse]
) -> None:
    client = sdk(server)
    browser = await client.browsers.create(enable_recording=True)
    assert browser.recording_url is None
    wait_until(lambda: len(recorders(server)) == 1, 30, what="a recorder to start")
    await asyncio.to_thread(wait_for_video, server.home / "data" / "browsers" / str(browser.id) / "recordings", 2.0)
    stopped = await client.browsers.stop(str(browser.id))
    assert stopped.recording_url is not None or stopped.recording_available
    view = await client.browsers.get(str(browser.id))
    assert view.recording_url is not None and "/files/recordings/browser-" in view.recording_url, view
    assert view.recording_available is True
    name = urlparse(view.recording_url).path.rsplit("/", 1)[-1]
    path = server.home / "data" / "browsers" / str(browser.id) / "recordings" / name
    info = probe(path)
    assert info["streams"][0]["height"] == 1080 and float(info["format"]["duration"]) >= 2.0, info
    assert fetch(view.recording_url) == path.read_bytes()

    plain = await client.browsers.create()
    await client.browsers.stop(str(plain.id))
    unrecorded = await client.browsers.get(str(plain.id))
    assert unrecorded.recording_url is None and unrecorded.recording_available is False


def test_a_stop_mid_turn_still_saves_and_lists_the_turns_recording(server: ServerProcess, fake: FakeProvider) -> None:
    session, gate = start_held_turn(server, fake, token("REC-STOP"), enableRecording=True)
    try:
        wait_until(lambda: len(recorders(server)) == 1, 30, what="a recorder to start")
        wait_for_video(session_files(server, session["id"]) / "recordings", 2.0)
        stopped = loopback.post(f"{server.v3}/sessions/{session['id']}/stop", json={"strategy": "session"}, timeout=60)
        assert stopped.status_code == 200, stopped.text
    finally:
        gate.open()
    ended = wait_until_status(server, session["id"], TERMINAL, timeout=60)
    assert ended["status"] == "stopped", ended
    assert len(ended["recordingUrls"]) == 1, ended
    files = recording_files(server, session["id"])
    assert len(files) == 1 and NAME.match(files[0].name), files
    assert float(probe(files[0])["format"]["duration"]) >= 2.0
    assert not recorders(server)


def test_recording_default_records_and_a_maintenance_shutdown_saves_the_file(
    tmp_path: Path, fake: FakeProvider
) -> None:
    with running_server(
        tmp_path / "maintenance-home", {**fake.env(), "RECORDING_DEFAULT": "1", "SHUTDOWN_GRACE_S": "1"}
    ) as process:
        session, gate = start_held_turn(process, fake, token("REC-MAINT"))  # no enableRecording: the default says so
        wait_until(lambda: len(recorders(process)) == 1, 30, what="a recorder to start")
        wait_for_video(session_files(process, session["id"]) / "recordings", 2.0)
        process.send_sigterm()
        assert process.wait_exited(60) in {0, -signal.SIGTERM}
        gate.open()
    files = recording_files(process, session["id"])
    assert len(files) == 1 and NAME.match(files[0].name), files  # final, not a .part
    info = probe(files[0])
    assert info["streams"][0]["width"] == 1920 and float(info["format"]["duration"]) >= 2.0, info


async def test_the_dashboard_offers_a_new_recording_and_its_step_marks_seek_the_video(
    server: ServerProcess, fake: FakeProvider
) -> None:
    session, gate = start_held_turn(server, fake, token("REC-DASH"), enableRecording=True)
    errors: list[str] = []
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = await chromium.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{server.base_url}/sessions/{session['id']}")  # open on loopback without a key
            await page.locator("body[data-status=running]").wait_for(state="attached", timeout=30_000)
            assert await page.locator("#recordings").count() == 0
            folder = session_files(server, session["id"]) / "recordings"
            await asyncio.to_thread(wait_for_video, folder, 2.0)  # some seconds of video
            gate.open()
            ready = page.locator("#recordings-ready")
            await ready.wait_for(timeout=60_000)  # the turn ended: its recording is offered without a reload
            await ready.locator("a").click()
            video = page.locator("#recording-1")
            await video.wait_for(timeout=30_000)
            await page.wait_for_function("() => document.querySelector('#recording-1').readyState >= 1", timeout=30_000)
            duration = await video.evaluate("v => v.duration")
            assert duration >= 2.0, duration
            done_mark = page.locator(".chapters a", has_text="Done:")
            seek = float(await done_mark.get_attribute("data-seek") or "nan")
            await done_mark.click()
            await page.wait_for_function(
                "at => Math.abs(document.querySelector('#recording-1').currentTime - at) < 0.6",
                arg=min(seek, duration),
                timeout=10_000,
            )
            if seek < duration:  # the mark of the playing step is highlighted once the player reports the seek
                await page.locator(".chapters a[aria-current]", has_text="Done:").wait_for(timeout=10_000)
        finally:
            gate.open()
            await chromium.close()
    assert not errors, errors


def test_a_recording_cut_short_by_a_server_crash_lists_after_the_restart(
    start_server: StartServer, fake: FakeProvider
) -> None:
    crashed = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=1, RECORDING_DEFAULT=1)
    session, gate = start_held_turn(crashed, fake, token("REC-CRASH"))
    try:
        wait_until(lambda: len(recorders(crashed)) == 1, 30, what="a recorder to start")
        wait_for_video(session_files(crashed, session["id"]) / "recordings", 2.0)  # a fragment on disk
        crashed.kill_hard()  # the sandbox, and the recorder in it, end with the server
        [partial] = recording_files(crashed, session["id"])
        assert partial.name.endswith(".mp4.part")
        restarted = start_server(home=crashed.home, **fake.env(), MAX_CONCURRENT_SESSIONS=1)
    finally:
        gate.open()
    interrupted = loopback.get(f"{restarted.v3}/sessions/{session['id']}", timeout=30).json()
    assert interrupted["status"] == "error" and len(interrupted["recordingUrls"]) == 1, interrupted
    [final] = recording_files(restarted, session["id"])
    assert NAME.match(final.name) and float(probe(final)["format"]["duration"]) >= 2.0
