"""The live-view HTML pages: the noVNC viewer (spec §4.10), and the page shown when there is nothing to watch.

The viewer is one small page, no build step: an inline ES module imports noVNC's ``RFB`` client from
``client_url`` (relative to the page, so it works behind any prefix) and connects it, view-only, scaled to fit
and without the dot cursor, to ``ws(s)://<host>/<path>`` where ``path`` comes from the page's own query (as in
``liveUrl``). Overlays say "Connecting…" until the first frame and "Stream ended" when the socket closes.
``document.body.dataset.state`` mirrors that (``connecting``/``connected``/``ended``) for tests and embedders.
A maintenance drain (spec §21.6) reaches the page on ``./notices`` (server-sent events beside the RFB socket): a
banner names the local time the browser restarts, and ``document.body.dataset.maintenance`` holds ``endsAt``.
``?control=1`` lets the page send input; the server only honours it after ``POST /vnc/{id}/control``, for a viewer
holding the API key or the dashboard's credentials.

Opened from a ``takeoverUrl`` (spec §21.5) whose token is still open, the page sends input, passes
``takeover=<token>`` on to its socket (the bridge lets that connection's input through), and shows "Hand back to
agent": a ``POST`` of the target's resume route with the token as ``Authorization: Bearer``, the one call it
authorises. ``document.body.dataset.takeover`` reads ``active``, then ``handed-back`` (or ``failed``).

Both pages are sent with a Content-Security-Policy (:data:`VIEWER_HEADERS`, :data:`NO_BROWSER_HEADERS`): their own
inline style and script by hash, modules and the stream from this origin only, noVNC's cursor as a ``data:``
image, no plugins, forms or ``<base>``. Embedding stays open (``frame-ancestors`` unset): a ``liveUrl`` is meant to
work in another site's iframe (spec §4.10).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from typing import Any

__all__ = ["ASSET_HEADERS", "NO_BROWSER_HEADERS", "VIEWER_HEADERS", "no_live_browser_page", "viewer_page"]

_STYLE = """
html, body { margin: 0; height: 100%; background: #1e1e1e; overflow: hidden; }
body { font: 16px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #e8e8e8; }
#screen { position: absolute; inset: 0; }
#overlay { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
           background: rgba(30, 30, 30, 0.85); pointer-events: none; text-align: center; padding: 1em; }
#overlay[hidden] { display: none; }
#takeover { position: absolute; top: 0.6em; right: 0.6em; display: flex; gap: 0.6em; align-items: center;
            background: rgba(30, 30, 30, 0.9); padding: 0.4em 0.6em; border-radius: 6px; }
#takeover[hidden] { display: none; }
#maintenance { position: absolute; top: 0; left: 0; right: 0; padding: 0.6em 1em; background: #7a4b00; color: #fff;
               text-align: center; }
#maintenance[hidden] { display: none; }
#hand-back { font: inherit; padding: 0.3em 0.9em; border: 0; border-radius: 4px; background: #2f7d4f; color: #fff;
             cursor: pointer; }
#hand-back:disabled { opacity: 0.6; cursor: default; }
main { max-width: 36em; margin: 0 auto; padding: 15vh 1.5em 0; }
h1 { font-size: 1.3em; font-weight: 600; margin: 0 0 0.6em; }
p { margin: 0 0 0.8em; color: #bdbdbd; }
code { color: #e8e8e8; }
"""

_VIEWER_SCRIPT = """
const config = JSON.parse(document.getElementById("live-config").textContent);
const overlay = document.getElementById("overlay");
function show(state, text) {
  document.body.dataset.state = state;
  overlay.textContent = text;
  overlay.hidden = !text;
}
watchNotices();
function watchNotices() {
  // The VNC socket carries RFB only: server notices come on a small event stream beside it.
  const url = new URL("./notices", location.href);
  if (config.token) url.searchParams.set("token", config.token);
  const source = new EventSource(url.href);
  source.addEventListener("maintenance_warning", (event) => {
    let endsAt = null;
    try {
      endsAt = JSON.parse(event.data).endsAt;
    } catch {
      endsAt = null;
    }
    if (typeof endsAt !== "number") return;
    source.close();
    const banner = document.getElementById("maintenance");
    const time = new Date(endsAt).toLocaleTimeString();
    banner.textContent = `This browser restarts for maintenance at ${time}. ` +
      "Finish what you are doing, then start a new session.";
    banner.hidden = false;
    document.body.dataset.maintenance = String(endsAt);
  });
}
let RFB = null;
try {
  ({ default: RFB } = await import(config.clientUrl));
} catch {
  // The browser went away while the page loaded (its assets are served by the session's own websockify).
  show("ended", "Stream ended: the viewer could not be loaded.");
}
if (RFB) connect(RFB);
function connect(RFB) {
const params = new URLSearchParams(location.search);
const path = (params.get("path") || config.defaultPath).replace(/^[\\/\\\\]+/, "");
const url = new URL("/" + path, location.href);
if (url.host !== location.host) {
  show("ended", "Stream ended: the stream path must stay on this server.");
  return;
}
url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
if (config.token && !url.searchParams.has("token")) url.searchParams.set("token", config.token);
const takeover = config.resumePath ? params.get("takeover") : null;
if (takeover) url.searchParams.set("takeover", takeover);
const rfb = new RFB(document.getElementById("screen"), url.href, { shared: true, wsProtocols: ["binary"] });
rfb.viewOnly = !takeover && params.get("control") !== "1";
if (takeover) offerHandBack(rfb, takeover);
rfb.scaleViewport = true;
rfb.resizeSession = false;
rfb.showDotCursor = false;
rfb.background = "#1e1e1e";
rfb.addEventListener("connect", () => show("connected", ""));
rfb.addEventListener("disconnect", () => {
  const why = document.body.dataset.maintenance ? ": the browser restarted for maintenance." : "";
  show("ended", "Stream ended" + why);
});
rfb.addEventListener("securityfailure", () => show("ended", "Stream ended: the VNC server refused the viewer."));
rfb.addEventListener("credentialsrequired", () => show("ended", "Stream ended: the VNC server asked for a password."));
}
function offerHandBack(rfb, takeover) {
  const bar = document.getElementById("takeover");
  const button = document.getElementById("hand-back");
  const status = document.getElementById("takeover-status");
  document.body.dataset.takeover = "active";
  bar.hidden = false;
  button.addEventListener("click", async () => {
    button.disabled = true;
    status.textContent = "";
    let answer = null;
    try {
      answer = await fetch(config.resumePath, {
        method: "POST",
        headers: { Authorization: "Bearer " + takeover, "Content-Type": "application/json" },
        body: "{}",
        credentials: "omit",
      });
    } catch {
      answer = null;
    }
    // 422: it was not paused any more; 401: its takeover was closed. Either way someone already handed it back.
    if (answer && (answer.ok || answer.status === 422 || answer.status === 401)) {
      rfb.viewOnly = true;
      document.body.dataset.takeover = "handed-back";
      button.hidden = true;
      status.textContent = answer.ok ? "Handed back to the agent; this view only watches now." : "Already handed back.";
    } else {
      document.body.dataset.takeover = "failed";
      button.disabled = false;
      status.textContent = "Could not hand back" + (answer ? " (" + answer.status + ")" : "") + "; try again.";
    }
  });
}
"""


def _json_for_script(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element (no ``</script>``, no HTML comment openers)."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _document(title: str, body: str, *, head_extra: str = "") -> str:
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{html.escape(title)}</title>{head_extra}<style>{_STYLE}</style></head>\n"
        f"<body>{body}</body></html>\n"
    )


def viewer_page(
    *, target_id: str, client_url: str, default_path: str, token: str | None, resume_path: str | None = None
) -> str:
    """The noVNC viewer for ``target_id``.

    ``client_url`` is where ``core/rfb.js`` is fetched from, relative to the page (it carries the view token in
    its path when auth is on); ``default_path`` is the websocket path used when the page has no ``path`` query;
    ``token`` is appended to the websocket URL as ``?token=``. ``resume_path`` (only when the page was opened with
    the target's open takeover token): the route "Hand back to agent" posts to.
    """
    config = {"clientUrl": client_url, "defaultPath": default_path, "token": token, "resumePath": resume_path}
    body = (
        '<div id="screen"></div><div id="overlay" role="status">Connecting…</div>'
        '<div id="takeover" hidden><span id="takeover-status" role="status"></span>'
        '<button type="button" id="hand-back">Hand back to agent</button></div>'
        '<div id="maintenance" role="alert" hidden></div>'
        f'<script type="application/json" id="live-config">{_json_for_script(config)}</script>'
        f'<script type="module">{_VIEWER_SCRIPT}</script>'
    )
    return _document(f"Live view · {target_id}", body).replace("<body>", '<body data-state="connecting">', 1)


def no_live_browser_page(*, target_id: str, kind: str, status: str, refresh_seconds: int | None) -> str:
    """Shown instead of the viewer when the session or browser exists but no browser of it is on a display."""
    noun = "Session" if kind == "session" else "Browser"
    if refresh_seconds:
        hint = f"<p>This page checks again every {refresh_seconds} seconds and shows the browser once it is up.</p>"
        head_extra = f'<meta http-equiv="refresh" content="{refresh_seconds}">'
    else:
        hint = ""
        head_extra = ""
    body = (
        '<main data-state="no-browser">'
        f"<h1>{noun} <code>{html.escape(target_id)}</code> is {html.escape(status)}.</h1>"
        "<p>It has no live browser right now, so there is nothing to watch.</p>"
        f"{hint}</main>"
    )
    return _document(f"No live browser · {target_id}", body, head_extra=head_extra)


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


_COMMON_POLICY = "object-src 'none'; base-uri 'none'; form-action 'none'"
VIEWER_HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; script-src 'self' {_hash(_VIEWER_SCRIPT)}; style-src {_hash(_STYLE)}; "
        f"connect-src 'self'; img-src 'self' data:; {_COMMON_POLICY}"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
"""The viewer: its inline module (by hash) importing noVNC from this origin, and the stream (``ws(s)://`` to this
host, which ``'self'`` covers)."""
NO_BROWSER_HEADERS = {
    "Content-Security-Policy": f"default-src 'none'; style-src {_hash(_STYLE)}; {_COMMON_POLICY}",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
ASSET_HEADERS = {
    "Content-Security-Policy": (f"default-src 'self'; img-src 'self' data:; connect-src 'self'; {_COMMON_POLICY}"),
    "X-Content-Type-Options": "nosniff",
}
"""Every file proxied from noVNC's web directory: noVNC's own pages (``vnc.html``) are served from this origin
too, so they get a policy that keeps them to it."""
