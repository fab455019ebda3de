"""What software WebGL costs (spec §28.2): a slot's CPU with ANGLE on SwiftShader against the same slot without.

    .venv/bin/python bench/software_gl.py [--iterations 3] [--seconds 5] [--markdown]

Xvfb has no GPU. Since issue 37 every slot's Chromium gets ``openbrowse.slots.browser_looks.SOFTWARE_GL_FLAGS``,
so pages get WebGL rendered on the CPU by SwiftShader; before, they got no WebGL context at all. Each iteration
starts a real slot (sandbox, Xvfb, Chromium; live view off) once per variant of :func:`variants` (the flags
replaced in this process; each variant goes first in turn), drives it with Playwright over the slot's CDP and
reads the CPU time (user + system, exited children included) of every process of the slot: the processes carrying
its tag and all their descendants (renderers, GPU process, zygotes).

Measured per slot: its start; a static page loaded and left idle for ``--seconds``; the same time of a CSS
animation, of a 2D canvas animation, and of a WebGL animation (a shaded, rotating triangle redrawn every frame;
without the flags the page has no context and draws nothing). Medians over the iterations.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.async_api import async_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from openbrowse.config import Settings
from openbrowse.slots import browser_looks
from openbrowse.slots.ledger import TAG_ENV
from openbrowse.slots.slot import Slot
from tests.support.asgi_thread import ThreadedServer
from tests.support.slot_range import free_slot_base, release_slot_base

ANIMATED_CSS = """<style>div{width:200px;height:200px;background:linear-gradient(45deg,#f0f,#0ff);
animation:spin 1s linear infinite}@keyframes spin{to{transform:rotate(360deg)}}</style><div></div>"""
CANVAS_2D = """<canvas id=c width=800 height=600></canvas><script>
const g=document.getElementById('c').getContext('2d');let a=0;
(function f(){a+=0.05;g.clearRect(0,0,800,600);g.save();g.translate(400,300);g.rotate(a);
g.fillStyle='#f0f';g.beginPath();g.moveTo(0,-200);g.lineTo(173,100);g.lineTo(-173,100);g.fill();g.restore();
requestAnimationFrame(f)})();</script>"""
WEBGL = """<canvas id=c width=800 height=600></canvas><p id=s></p><script>
const gl=document.getElementById('c').getContext('webgl');document.getElementById('s').textContent=gl?'webgl':'none';
if(gl){const sh=(t,src)=>{const s=gl.createShader(t);gl.shaderSource(s,src);gl.compileShader(s);return s};
const p=gl.createProgram();
gl.attachShader(p,sh(gl.VERTEX_SHADER,'attribute vec2 v;uniform float a;varying vec2 q;void main(){q=v;'+
'gl_Position=vec4(v.x*cos(a)-v.y*sin(a),v.x*sin(a)+v.y*cos(a),0,1);}'));
gl.attachShader(p,sh(gl.FRAGMENT_SHADER,'precision mediump float;varying vec2 q;'+
'void main(){gl_FragColor=vec4(q*0.5+0.5,sin(q.x*20.0)*0.5+0.5,1);}'));
gl.linkProgram(p);gl.useProgram(p);gl.bindBuffer(gl.ARRAY_BUFFER,gl.createBuffer());
gl.bufferData(gl.ARRAY_BUFFER,new Float32Array([0,.9,.78,-.45,-.78,-.45]),gl.STATIC_DRAW);
const v=gl.getAttribLocation(p,'v');gl.enableVertexAttribArray(v);gl.vertexAttribPointer(v,2,gl.FLOAT,false,0,0);
const u=gl.getUniformLocation(p,'a');let a=0;
(function f(){a+=0.05;gl.clearColor(0,0,0,1);gl.clear(gl.COLOR_BUFFER_BIT);gl.uniform1f(u,a);
gl.drawArrays(gl.TRIANGLES,0,3);requestAnimationFrame(f)})();}</script>"""
PAGES = {"static": "<h1>A static page</h1><p>Text only.</p>", "css": ANIMATED_CSS, "canvas": CANVAS_2D, "webgl": WEBGL}
COLUMNS = ("start", "static", "css", "canvas", "webgl")


def pages_app() -> Starlette:
    async def page(request: Request) -> HTMLResponse:
        body = PAGES.get(request.path_params["name"])
        if body is None:  # favicon.ico
            return HTMLResponse("", status_code=404)
        return HTMLResponse(f"<!doctype html><html><head><title>bench</title></head><body>{body}</body></html>")

    return Starlette(routes=[Route("/{name}", page)])


def _tree(tag: str) -> Iterator[psutil.Process]:
    tagged = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(TAG_ENV) == tag:
                tagged.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    seen: set[int] = set()
    for proc in tagged:
        try:
            family = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for member in family:
            if member.pid not in seen:
                seen.add(member.pid)
                yield member


def slot_cpu(tag: str) -> float:
    """CPU seconds (user + system, reaped children included) of the slot's processes so far (blocking)."""
    total = 0.0
    for proc in _tree(tag):
        try:
            times = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


async def measure(slot: Slot, site: str, seconds: float) -> dict[str, float]:
    cpu = {"start": await asyncio.to_thread(slot_cpu, slot.tag)}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(slot.cdp_url)
        page = browser.contexts[0].pages[0]
        for name in PAGES:
            before = await asyncio.to_thread(slot_cpu, slot.tag)
            await page.goto(f"{site}/{name}")
            await asyncio.sleep(seconds)  # a benchmark window, not a wait for an event
            cpu[name] = await asyncio.to_thread(slot_cpu, slot.tag) - before
        if (await page.text_content("#s")) not in {"webgl", "none"}:
            raise RuntimeError("the WebGL page did not run")
        await browser.close()
    return cpu


BEFORE = "no GL flags (before)"


def variants() -> dict[str, tuple[str, ...]]:
    """The GL flags of each variant: none (the slots before issue 37), SwiftShader for WebGL and the compositor,
    SwiftShader for WebGL with the compositor kept in software (``--disable-gpu-compositing``)."""
    shipped = browser_looks.SOFTWARE_GL_FLAGS
    swiftshader = tuple(flag for flag in shipped if flag != "--disable-gpu-compositing")
    return {
        BEFORE: (),
        "SwiftShader, GPU compositing": swiftshader,
        "SwiftShader, software compositing": (*swiftshader, "--disable-gpu-compositing"),
    }


async def run(iterations: int, seconds: float) -> dict[str, list[dict[str, float]]]:
    scratch = Path(tempfile.mkdtemp(prefix="software-gl-bench-"))
    base = free_slot_base(1)
    settings = Settings(OPENBROWSE_HOME=scratch, SLOT_BASE_INDEX=base, MAX_CONCURRENT_SESSIONS=1, NETWORK_POLICY="open")
    shipped = browser_looks.SOFTWARE_GL_FLAGS
    flag_sets = variants()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in flag_sets}
    try:
        with ThreadedServer(pages_app()) as site:
            for n in range(iterations):
                names = list(flag_sets)
                for name in names[n % len(names) :] + names[: n % len(names)]:  # each variant first in turn
                    browser_looks.SOFTWARE_GL_FLAGS = flag_sets[name]
                    slot = Slot(settings, base)
                    try:
                        await slot.start(vnc=False)
                        results[name].append(await measure(slot, site.url, seconds))
                    finally:
                        await slot.stop()
    finally:
        browser_looks.SOFTWARE_GL_FLAGS = shipped
        release_slot_base(base)
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(run(args.iterations, args.seconds))
    medians = {
        variant: {column: statistics.median(row[column] for row in rows) for column in COLUMNS}
        for variant, rows in results.items()
    }
    header = ["slot CPU seconds", "start", *(f"{name}, {args.seconds:g} s" for name in PAGES)]
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 1))
    for variant, row in medians.items():
        print(f"| {variant} | " + " | ".join(f"{row[column]:.2f}" for column in COLUMNS) + " |")
    off = medians[BEFORE]
    for variant, on in medians.items():
        if variant != BEFORE:
            ratios = " | ".join(f"{on[c] / off[c]:.2f}x" if off[c] else "n/a" for c in COLUMNS)
            print(f"| {variant} ÷ before | {ratios} |")
    print(f"\n{args.iterations} iterations, medians; load average {psutil.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
