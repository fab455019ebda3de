"""The code tab (spec §11.3): a static page the session's own Chromium opens while the model writes a script.

The page holds no data and asks for none. It defines ``window.__setCode(name, code, status)``; the agent layer
calls it over CDP (``Runtime.evaluate``) with the decoded code prefix while the reply streams (``Writing``), then
``Running``, then ``Done``/``Failed``. Its content security policy allows exactly its own inline style and script
(by hash) and nothing else: no fetch, no images, no frames, no form targets, so even a hostile page that opened
it could learn nothing and reach nothing through it. That is why the route needs no credentials: Chromium
opens it by a plain navigation, with no API key or view token to carry (see ``routes/codeview.py``).

Readable on the 1920x1080 live view: a 20px monospace face on a deep teal background (``CODE_BACKGROUND``),
distinct from ordinary web pages, so a watcher (and a test reading the live view's pixels) knows at a glance
that the screen shows the agent's code, not the site.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["CODEVIEW_HEADERS", "CODEVIEW_HTML", "CODE_BACKGROUND"]

CODE_BACKGROUND = (7, 59, 58)
"""``#073b3a``: the page's background colour."""

_STYLE = """
html, body { margin: 0; height: 100%; background: #073b3a; color: #f4f1de; overflow: hidden; }
body { display: flex; flex-direction: column; font: 20px/1.45 "DejaVu Sans Mono", "Liberation Mono", monospace; }
header { display: flex; align-items: center; gap: 0.8em; padding: 0.55em 1.2em; background: #052826;
         border-bottom: 3px solid #e9c46a; font-family: "DejaVu Sans", system-ui, sans-serif; font-size: 22px; }
#badge { padding: 0.1em 0.7em; border-radius: 0.35em; font-weight: 700; color: #073b3a; background: #e9c46a; }
body[data-status="Running"] #badge { background: #8ecae6; }
body[data-status="Done"] #badge { background: #80ed99; }
body[data-status="Failed"] #badge { background: #f28482; }
#name { font-weight: 600; }
#size { margin-left: auto; color: #a8c5c1; font-size: 18px; }
#scroller { flex: 1; overflow: auto; padding: 0.8em 0; }
table { border-collapse: collapse; }
td { padding: 0 1.2em 0 0; vertical-align: top; white-space: pre; }
td.n { color: #5f8f8a; text-align: right; padding: 0 1em 0 1.2em; user-select: none; }
#caret { display: inline-block; width: 0.6em; height: 1.1em; background: #e9c46a; vertical-align: text-bottom;
         animation: blink 1s steps(1) infinite; }
body:not([data-status="Writing"]) #caret { display: none; }
@keyframes blink { 50% { opacity: 0; } }
"""

_SCRIPT = """
(() => {
  const body = document.body;
  const rows = document.getElementById("rows");
  const scroller = document.getElementById("scroller");
  const caret = document.createElement("span");
  caret.id = "caret";
  window.__setCode = (name, code, status) => {
    const text = String(code ?? "");
    body.dataset.status = String(status);
    document.getElementById("badge").textContent = String(status);
    document.getElementById("name").textContent = String(name || "script");
    document.getElementById("size").textContent = text.length + " chars";
    document.title = status + " " + (name || "script");
    const lines = text.split("\\n");
    rows.replaceChildren(...lines.map((line, index) => {
      const row = document.createElement("tr");
      const number = document.createElement("td");
      number.className = "n";
      number.textContent = String(index + 1);
      const cell = document.createElement("td");
      cell.textContent = line;
      row.append(number, cell);
      return row;
    }));
    rows.lastElementChild.lastElementChild.append(caret);
    if (status === "Writing") scroller.scrollTop = scroller.scrollHeight;
    window.__codeText = text;
    return text.length;
  };
})();
"""


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


CODEVIEW_HTML = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Code</title>
<style>{_STYLE}</style>
</head>
<body data-status="Waiting">
<header><span id="badge">Waiting</span><span id="name">script</span><span id="size"></span></header>
<div id="scroller"><table><tbody id="rows"></tbody></table></div>
<script>{_SCRIPT}</script>
</body>
</html>
"""

CODEVIEW_HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; style-src {_hash(_STYLE)}; script-src {_hash(_SCRIPT)}; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
