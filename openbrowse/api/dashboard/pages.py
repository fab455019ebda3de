"""The dashboard's HTML, rendered on the server: one layout and one function per page (spec §19.4).

Every value is escaped here (``html.escape``); the pages' scripts (``static/*.js``) take over from the rendered
state and keep it live through the same-origin API, writing data with ``textContent`` only. Pages carry no inline
script or style, so a ``script-src 'self'`` Content-Security-Policy holds (:data:`PAGE_HEADERS`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from openbrowse.api.schemas import SessionView
from openbrowse.domain.clock import from_wire

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "PAGE_HEADERS",
    "browsers_page",
    "login_page",
    "not_found_page",
    "profiles_page",
    "run_page",
    "session_page",
    "sessions_page",
    "with_logout",
]

STATIC = "/ui/static"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}
"""Sent with every page: nothing but this origin (the feed shows text taken from arbitrary web pages; the pages
render it as text, and the policy is the second line of defence)."""
_KEBAB = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NAV = (("sessions", "/", "Sessions"), ("run", "/run", "New run"), ("browsers", "/browsers", "Browsers"),
        ("profiles", "/profiles", "Profiles"))  # fmt: skip


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _data_attributes(data: Mapping[str, str]) -> str:
    """``{"sessionId": "x"}`` -> `` data-session-id="x"`` (what ``element.dataset.sessionId`` reads)."""
    return "".join(f' data-{_KEBAB.sub("-", name).lower()}="{_e(value)}"' for name, value in data.items())


def layout(*, title: str, page: str, body: str, data: Mapping[str, str] | None = None, script: bool = True) -> str:
    """The document around a page: nav, stylesheet, and the page's own script module (``static/<page>.js``)."""
    module = f'<script type="module" src="{STATIC}/{page}.js"></script>' if script else ""
    links = "".join(
        f'<a href="{href}"{" aria-current=page" if name == page else ""}>{label}</a>' for name, href, label in _NAV
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} · OpenBrowse</title>"
        f'<link rel="stylesheet" href="{STATIC}/dashboard.css">'
        f"{module}</head>\n"
        f'<body data-page="{page}"{_data_attributes(data or {})}>'
        f'<header class="top"><a class="brand" href="/">OpenBrowse</a><nav>{links}</nav>{_ACCOUNT_SLOT}</header>'
        f"<main>{body}</main></body></html>\n"
    )


_ACCOUNT_SLOT = "<!--account-->"
_LOGOUT_FORM = (
    '<form class="account" method="post" action="/dashboard/logout">'
    '<button type="submit" id="logout">Log out</button></form>'
)


def with_logout(document: str, csrf_token: str) -> str:
    """The page with a "Log out" button in its header, for a browser signed in with the login form; its scripts
    send it back to the form when the login expires (``data-signed-in``), and send the login's CSRF token
    (``data-csrf``) with every call that changes something."""
    marked = document.replace("<body ", f'<body data-signed-in="cookie" data-csrf="{_e(csrf_token)}" ', 1)
    return marked.replace(_ACCOUNT_SLOT, _LOGOUT_FORM, 1)


def login_page(*, next_path: str, error: str = "", available: bool = True, arrived_from_elsewhere: bool = False) -> str:
    """The login form (spec §25.2). It posts same-origin to ``/dashboard/login``; ``next_path`` is where a
    successful login goes. ``arrived_from_elsewhere``: the request came from another site's link, which carries no
    ``SameSite=Strict`` cookie, so a browser that is signed in already is offered a plain link onward."""
    if not available:
        body = (
            "<h1>Sign in</h1>"
            '<p class="placeholder">The dashboard login is off: this server has <code>API_KEY</code> set but no '
            "<code>DASHBOARD_PASSWORD</code>. Set <code>DASHBOARD_PASSWORD</code> (a secret of its own, not the "
            "API key) and restart to sign in here.</p>"
        )
        return layout(title="Sign in", page="login", body=body, script=False)
    onward = (
        f'<p class="hint">Already signed in in this browser? <a id="continue" href="{_e(next_path)}">Continue</a>.</p>'
        if arrived_from_elsewhere
        else ""
    )
    body = (
        "<h1>Sign in</h1>"
        '<form id="login-form" class="inline-form" method="post" action="/dashboard/login">'
        f'<input type="hidden" name="next" value="{_e(next_path)}">'
        '<label for="login-user">User</label>'
        '<input id="login-user" name="username" autocomplete="username" required autofocus>'
        '<label for="login-password">Password</label>'
        '<input id="login-password" name="password" type="password" autocomplete="current-password" required>'
        '<div class="actions"><button type="submit" class="primary">Sign in</button>'
        f'<span id="login-error" class="error" role="alert">{_e(error)}</span></div></form>'
        f"{onward}"
    )
    return layout(title="Sign in", page="login", body=body, script=False)


def age(created_at: str, now: datetime | None = None) -> str:
    """``"12 s ago"``, ``"5 min ago"``, ``"3 h ago"``, ``"2 d ago"`` (the scripts use the same wording)."""
    seconds = max(0, int(((now or datetime.now(UTC)) - from_wire(created_at)).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def status_badge(status: str) -> str:
    return f'<span class="badge status-{_e(status)}">{_e(status)}</span>'


def session_row(session: SessionView) -> str:
    title = session.title or "(no task yet)"
    return (
        f'<tr data-id="{_e(session.id)}">'
        f'<td class="col-status">{status_badge(session.status)}</td>'
        f'<td class="col-title"><a href="/sessions/{_e(session.id)}">{_e(title)}</a></td>'
        f'<td class="col-model">{_e(session.model)}</td>'
        f'<td class="col-cost">${_e(session.total_cost_usd)}</td>'
        f'<td class="col-age"><time datetime="{_e(session.created_at)}">{_e(age(session.created_at))}</time></td>'
        f'<td class="col-steps">{session.step_count}</td></tr>'
    )


def sessions_page(sessions: Sequence[SessionView], *, total: int, page: int, page_size: int) -> str:
    rows = "".join(session_row(s) for s in sessions) or _EMPTY_ROW
    pages = max(1, -(-total // page_size))
    body = (
        '<div class="bar"><h1>Sessions</h1><a class="button primary" href="/run">New run</a></div>'
        '<table class="sessions"><thead><tr><th class="col-status">Status</th><th class="col-title">Task</th>'
        '<th class="col-model">Model</th><th class="col-cost">Cost</th><th class="col-age">Age</th>'
        '<th class="col-steps">Steps</th></tr></thead>'
        f'<tbody id="rows">{rows}</tbody></table>'
        '<nav class="pager">'
        f'<a id="prev" class="button" href="/?page={page - 1}"{"" if page > 1 else " hidden"}>Newer</a>'
        f'<span id="page-info">Page {page} of {pages} · {total} sessions</span>'
        f'<a id="next" class="button" href="/?page={page + 1}"{"" if page < pages else " hidden"}>Older</a></nav>'
    )
    return layout(
        title="Sessions", page="sessions", body=body, data={"pageNumber": str(page), "pageSize": str(page_size)}
    )


_EMPTY_ROW = '<tr class="empty"><td colspan="6">No sessions yet. <a href="/run">Start a run</a>.</td></tr>'


def _end_reason(session: SessionView) -> str:
    """Why an ended session's browser went away (spec §21.1), e.g. ``maintenance``; empty while it lives."""
    text = f"ended: {session.end_reason}" if session.end_reason else ""
    return f' <span id="end-reason" class="end-reason"{"" if text else " hidden"}>{_e(text)}</span>'


def session_page(session: SessionView, playback: str = "") -> str:
    """``playback``: the ended session's recordings, shown in place of the live view (``dashboard/playback.py``)."""
    title = session.title or "Session"
    body = (
        '<section class="session-head">'
        f'<h1 id="title">{_e(title)}</h1>'
        f'<p class="meta"><span id="status">{status_badge(session.status)}</span> '
        f'<span id="model">{_e(session.model)}</span> · <span id="steps">{steps(session.step_count)}</span> · '
        f'<span id="cost">${_e(session.total_cost_usd)}</span>'
        f'<span id="budget"></span> <span id="outcome"></span>{_end_reason(session)} · <code class="session-id">'
        + _e(session.id)
        + "</code></p>"
        '<p id="activity" class="activity" hidden></p>'
        '<div class="actions">'
        '<button type="button" id="stop-task">Stop task</button>'
        '<button type="button" id="stop-session" class="danger">Stop session</button>'
        '<button type="button" id="pause" hidden>Pause</button>'
        '<a id="take-over" class="button primary" target="_blank" rel="noopener" hidden>Take over</a>'
        '<button type="button" id="hand-back" hidden>Hand back</button>'
        '<span id="pause-state" class="placeholder" hidden></span>'
        '<span id="action-error" class="error" role="alert"></span></div></section>'
        '<div class="session-grid">'
        '<section class="live"><h2>Live view</h2><div class="live-box">'
        '<iframe id="live" title="Live view of the browser" hidden></iframe>'
        '<p id="live-empty" class="placeholder">No live browser right now.</p></div>'
        f"{playback}</section>"
        '<section class="side">'
        '<div class="tabs" role="tablist">'
        '<button type="button" role="tab" data-tab="feed" aria-selected="true">Feed</button>'
        '<button type="button" role="tab" data-tab="code" aria-selected="false">Code</button>'
        '<button type="button" role="tab" data-tab="output" aria-selected="false">Output</button></div>'
        '<div id="tab-feed" class="tab-panel"><ol id="feed" class="feed" aria-live="polite"></ol></div>'
        '<div id="tab-code" class="tab-panel" hidden><p id="code-meta" class="placeholder">No script yet.</p>'
        '<pre id="code" class="code" hidden></pre></div>'
        '<div id="tab-output" class="tab-panel" hidden><div id="output"><p class="placeholder">No output yet.</p></div>'
        "</div>"
        '<form id="follow-up" class="follow-up" hidden>'
        '<label for="follow-up-task">Follow-up task</label>'
        '<textarea id="follow-up-task" name="task" rows="2" required></textarea>'
        '<button type="submit" class="primary">Send</button>'
        '<span id="follow-up-error" class="error" role="alert"></span></form>'
        "</section></div>"
    )
    return layout(title=title, page="session", body=body, data={"sessionId": session.id})


def _options(values: Iterable[tuple[str, str]], selected: str = "") -> str:
    return "".join(
        f'<option value="{_e(value)}"{" selected" if value == selected else ""}>{_e(label)}</option>'
        for value, label in values
    )


def run_page(models: Sequence[str], efforts: Sequence[str]) -> str:
    model_options = _options([("", "Server default"), *((m, m) for m in models)])
    effort_options = _options((e, e) for e in efforts)
    body = (
        "<h1>New run</h1>"
        '<form id="run-form" class="run-form" novalidate>'
        '<label for="task">Task</label>'
        '<textarea id="task" name="task" rows="4" required '
        'placeholder="Open https://example.com and tell me what it says."></textarea>'
        '<div class="row">'
        f'<div><label for="model">Model</label><select id="model" name="model">{model_options}</select></div>'
        '<div><label for="effort">Reasoning effort</label>'
        f'<select id="effort" name="reasoningEffort">{effort_options}</select></div></div>'
        '<div class="row">'
        '<div><label for="budget">Budget (USD)</label>'
        '<input id="budget" name="maxCostUsd" type="number" min="0.01" step="0.01" inputmode="decimal" '
        'placeholder="no limit"></div>'
        '<div><label for="profile">Profile</label><select id="profile" name="profileId">'
        '<option value="">None</option></select><small id="profile-note" class="hint"></small></div></div>'
        '<label class="check"><input id="keep-alive" name="keepAlive" type="checkbox"> Keep alive '
        "(the browser waits for follow-up tasks)</label>"
        '<label for="schema">Output schema (JSON Schema, optional)</label>'
        '<textarea id="schema" name="outputSchema" rows="6" spellcheck="false" class="mono" '
        'placeholder=\'{"type": "object", "properties": {"items": {"type": "array"}}}\'></textarea>'
        '<small id="schema-error" class="error" role="alert"></small>'
        '<div class="actions"><button type="submit" class="primary">Run</button>'
        '<span id="run-error" class="error" role="alert"></span></div></form>'
    )
    return layout(title="New run", page="run", body=body)


def profiles_page() -> str:
    body = (
        "<h1>Profiles</h1>"
        '<p id="profiles-note" class="placeholder">Loading…</p>'
        '<div id="profiles-ui" hidden>'
        '<table class="profiles"><thead><tr><th>Name</th><th>Id</th><th>Cookie domains</th><th>Last used</th>'
        '<th>Storage state</th></tr></thead><tbody id="profile-rows"></tbody></table>'
        '<form id="import-form" class="inline-form">'
        "<h2>Import a storage state</h2>"
        '<label for="import-id">Profile id (new or existing)</label>'
        '<input id="import-id" name="id" required pattern="[A-Za-z0-9._-]+" placeholder="my-profile">'
        '<label for="import-file">Storage-state JSON file</label>'
        '<input id="import-file" name="file" type="file" accept="application/json,.json" required>'
        '<div class="actions"><button type="submit" class="primary">Import</button>'
        '<span id="import-result" role="status"></span></div></form>'
        '<form id="create-form" class="inline-form"><h2>New empty profile</h2>'
        '<label for="create-name">Name</label><input id="create-name" name="name" placeholder="billing">'
        '<div class="actions"><button type="submit">Create</button>'
        '<span id="create-result" role="status"></span></div></form></div>'
    )
    return layout(title="Profiles", page="profiles", body=body)


def browsers_page() -> str:
    body = (
        "<h1>Raw browsers</h1>"
        "<p class=hint>Browsers started with <code>POST /v3/browsers</code> for your own agent; live ones are"
        " shown here with their live view.</p>"
        '<p id="browsers-note" class="placeholder">Loading…</p>'
        '<ul id="browsers" class="browsers"></ul>'
        "<h2>Recently ended</h2>"
        '<p id="ended-note" class="placeholder">None yet.</p>'
        '<ul id="ended-browsers" class="ended-browsers"></ul>'
    )
    return layout(title="Browsers", page="browsers", body=body)


def not_found_page(what: str) -> str:
    body = f'<h1>Not found</h1><p class="placeholder">{_e(what)}</p><p><a href="/">Back to the sessions</a></p>'
    return layout(title="Not found", page="notfound", body=body, script=False)
