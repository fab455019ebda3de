"""JavaScript the reading tools run inside pages and frames (kept apart from the Python that sends it)."""

from __future__ import annotations

import json

from openbrowse.scripthost.page_js import READ_PAGE  # one copy: the sandboxed script host uses it too

SCROLL_ROUNDS = 8
SCROLL_PAUSE_MS = 600
SCROLL_CHECK_MS = 50

# Scroll the document (and its scrollable boxes) to the end until the anchor count stops growing: a round waits
# up to 0.6 s for more anchors and ends as soon as they come; no round waits when nothing could scroll.
SCROLL_UNTIL_STABLE = f"""
(async () => {{
  const count = () => document.querySelectorAll('a[href]').length;
  const scrollers = () => [document.scrollingElement || document.documentElement,
    ...Array.from(document.querySelectorAll('*')).filter(e => e.scrollHeight > e.clientHeight + 40 &&
      ['auto', 'scroll'].includes(getComputedStyle(e).overflowY))];
  const grew = before => new Promise(resolve => {{
    const started = Date.now();
    const check = () => {{
      if (count() > before) resolve(true);
      else if (Date.now() - started >= {SCROLL_PAUSE_MS}) resolve(false);
      else setTimeout(check, {SCROLL_CHECK_MS});
    }};
    setTimeout(check, {SCROLL_CHECK_MS});
  }});
  let before = count(), rounds = 0;
  for (; rounds < {SCROLL_ROUNDS}; rounds++) {{
    const boxes = scrollers();
    const at = boxes.map(box => box.scrollTop).join(',') + ':' + window.scrollY;
    for (const box of boxes) box.scrollTop = box.scrollHeight;
    window.scrollTo(0, document.body ? document.body.scrollHeight : 0);
    if (boxes.map(box => box.scrollTop).join(',') + ':' + window.scrollY === at) break;  // nothing to scroll
    if (!(await grew(before))) break;
    before = count();
  }}
  window.scrollTo(0, 0);
  return {{anchors: count(), rounds}};
}})()
"""


RELAXED_ATTRS = ("data-href", "data-url", "data-link", "data-job-url")


def collect_links(attr: str | None, visible_only: bool, avoid: str | None = None) -> str:
    """A function body for ``callFunctionOn`` / an expression: every anchor below ``this`` (or the document).

    ``avoid`` is the relaxed reading of a panel whose anchors were rewritten to the host page's URL: each element
    gives the first of its ``data-href``-like attributes and ``href`` that resolves to another URL than ``avoid``.
    """
    relaxed = [*RELAXED_ATTRS, "href"] if avoid else []
    selector = "a[href]" + (f", [{attr}]" if attr else "") + "".join(f", [{name}]" for name in relaxed[:-1])
    return f"""
function() {{
  const root = (this && this.querySelectorAll) ? this : document;
  const attr = {json.dumps(attr)};
  const visibleOnly = {json.dumps(visible_only)};
  const avoid = {json.dumps(avoid)};
  const relaxed = {json.dumps(relaxed)};
  const resolve = raw => {{ try {{ return new URL(raw, document.baseURI).href; }} catch (e) {{ return null; }} }};
  const bare = url => url.split('#')[0];
  const out = [];
  for (const a of root.querySelectorAll({json.dumps(selector)})) {{
    let href = null;
    if (avoid) {{
      for (const name of relaxed) {{
        const raw = a.getAttribute(name);
        const url = raw && resolve(raw);
        if (url && bare(url) !== avoid) {{ href = url; break; }}
      }}
    }} else {{
      const raw = attr ? a.getAttribute(attr) : a.href;
      href = raw && resolve(raw);
    }}
    if (!href) continue;
    if (visibleOnly) {{
      const r = a.getBoundingClientRect();
      if (!r.width || !r.height || getComputedStyle(a).visibility === 'hidden') continue;
    }}
    const text = (a.innerText || a.textContent || a.getAttribute('aria-label') || a.title || '').trim()
      .replace(/\\s+/g, ' ').slice(0, 200);
    out.push({{href, text}});
  }}
  return {{links: out, anchors: document.querySelectorAll('a[href]').length,
           iframes: document.querySelectorAll('iframe').length, url: location.href}};
}}
"""


RENDER_PROBE = """
(() => ({ready: document.readyState, chars: document.body ? document.body.innerText.length : 0}))()
"""


STALE_MARK = "__openbrowseStale"
SETTLED_MS = 100
TIMER_FALLBACK_MS = 1000


def read_when_ready(timeout_ms: int, min_chars: int, *, wait_shown: bool = False) -> str:
    """Wait in the page until it is loaded, rendered in the foreground and its text stopped growing, then read it.

    A frame counts as rendered once a task queued from its animation-frame callback runs: the callback only fires
    while the tab is really shown in the foreground, and the task runs after that frame's rendering update. The
    text must be unchanged across such a frame, at least 100 ms after the load event ended; the first sample is
    taken before the frame, so a page that loaded in its background tab costs one frame. A tab that renders no
    frame for a second (no compositor) falls back to samples 100 ms apart.

    ``wait_shown``: the script is sent before its tab is focused and waits, idle, until the tab is shown (again,
    if it is hidden before the read is done); the second above starts then, and a hidden tab is never read.
    """
    return f"""
(async () => {{
  if (window.{STALE_MARK}) return null;  // a reused tab still shows the page it is navigating away from
  const deadline = Date.now() + {timeout_ms};
  const pause = ms => new Promise(r => setTimeout(() => r(false), ms));
  const shown = () => new Promise(r => {{
    const check = () => {{
      if (document.visibilityState !== 'visible') return;
      document.removeEventListener('visibilitychange', check);
      r(true);
    }};
    document.addEventListener('visibilitychange', check);
    check();
  }});
  const hidden = () => {json.dumps(wait_shown)} && document.visibilityState !== 'visible';
  const chars = () => document.body ? document.body.innerText.length : 0;
  const rendered = () => new Promise(r => requestAnimationFrame(() => {{
    const channel = new MessageChannel();
    channel.port1.onmessage = () => r(true);
    channel.port2.postMessage(null);
  }}));
  const settledMs = () => {{
    const nav = performance.getEntriesByType('navigation')[0];
    if (!nav) return Infinity;
    return nav.loadEventEnd ? performance.now() - nav.loadEventEnd : -1;
  }};
  let started = Date.now(), last = document.readyState === 'complete' ? chars() : -1, frames = 0;
  while (Date.now() < deadline) {{
    if (window.{STALE_MARK}) return null;
    if (hidden()) {{  // sent early, or hidden again before the read was done: wait until shown
      await Promise.race([shown(), pause(deadline - Date.now())]);
      if (hidden()) return null;
      started = Date.now(); frames = 0;
      last = document.readyState === 'complete' ? chars() : -1;
    }}
    if (await Promise.race([rendered(), pause({SETTLED_MS})])) frames++;
    if (document.readyState !== 'complete') {{ last = -1; continue; }}
    const now = chars();
    const painted = frames >= 1 || Date.now() - started > {TIMER_FALLBACK_MS};
    if (now >= {min_chars} && now === last && painted && settledMs() >= {SETTLED_MS} && !hidden()) break;
    last = now;
  }}
  if (window.{STALE_MARK} || hidden()) return null;
  return {READ_PAGE.strip()};
}})()
"""
