// Session page: live view, feed cards, code tab, output, stop, pause and hand-back buttons and follow-ups, kept live.
//
// Live updates come from the event stream (GET /v3/sessions/{id}/events, spec §4.8) when the server has it.
// When it answers with an error before ever opening (404/405 on a server without it), the page falls back to
// polling GET /v3/sessions/{id}/messages?after=<last id> and GET /v3/sessions/{id} every second (spec §4.7).
// Messages are keyed by id, so a replay after a reconnect never shows a card twice.
import { TERMINAL, api, el, showMaintenance, statusBadge } from "./common.js";
import { codeFromMessage, renderMessage } from "./feed.js";
import { renderOutput } from "./output.js";

const POLL_MS = 1000;
const IDLE_POLL_MS = 3000;
const FOLLOW_UP_AFTER_STOP = new Set(["stopped", "timed_out", "error"]);
const PAUSE_ACTIONS = new Set(["pause", "resume", "pauseExpired"]);

const body = document.body;
const sessionId = body.dataset.sessionId;
const base = `/v3/sessions/${encodeURIComponent(sessionId)}`;
const $ = (id) => document.getElementById(id);

let session = null;
let lastId = null;
const seen = new Set();
let stream = null;
let pollTimer = null;
let outputShown;

// -- header, buttons, live view -------------------------------------------------------------------------------
function showSession(next) {
  session = { ...(session || {}), ...next };
  body.dataset.status = session.status;
  if (session.title) $("title").textContent = session.title;
  $("status").replaceChildren(statusBadge(session.status));
  $("model").textContent = session.model;
  const count = session.stepCount ?? 0;
  $("steps").textContent = `${count} step${count === 1 ? "" : "s"}`;
  showOutcome();
  showEndReason();
  $("cost").textContent = `$${session.totalCostUsd ?? "0"}`;
  $("budget").textContent = session.maxCostUsd ? ` of $${session.maxCostUsd}` : "";
  const busy = session.status === "running" || session.status === "created";
  $("stop-task").disabled = !busy;
  $("stop-session").disabled = !busy && !session.browserLive;
  const acceptsFollowUp =
    session.status === "idle" || (session.keepAlive && FOLLOW_UP_AFTER_STOP.has(session.status));
  $("follow-up").hidden = !acceptsFollowUp;
  showPause();
  showLive(session.liveUrl);
  offerNewRecordings(session.recordingUrls);
  if (TERMINAL.has(session.status)) showActivity(null);
  else if ("activity" in next) showActivity(next.activity);
  const outputKey = JSON.stringify(session.output ?? null);
  if (outputKey !== outputShown) {
    outputShown = outputKey;
    renderOutput($("output"), session.output, sessionId);
  }
}

// Recordings (spec §22.1) are rendered with the page (playback.py); one that became ready since is offered here.
function offerNewRecordings(urls) {
  const shown = document.querySelectorAll(".recordings video").length;
  if (!Array.isArray(urls) || urls.length <= shown || $("recordings-ready")) return;
  const reload = el("a", { href: location.pathname, text: "Show it" });
  const note = el("p", { id: "recordings-ready", class: "hint" }, "A new recording is ready. ", reload);
  $("live").closest("section").append(note);
}

// A person's takeover (spec §21.5): Pause while the agent runs or a parked browser is up; while paused, Take over
// (the takeover link, with input) and Hand back.
function showPause() {
  const pause = session.pause || null;
  const pausable = session.status === "running" || (session.status === "idle" && session.browserLive);
  $("pause").hidden = Boolean(pause) || !pausable;
  $("hand-back").hidden = !pause;
  const takeOver = $("take-over");
  takeOver.hidden = !(pause && session.takeoverUrl);
  if (pause && session.takeoverUrl) takeOver.href = session.takeoverUrl;
  else takeOver.removeAttribute("href");
  const state = $("pause-state");
  state.hidden = !pause;
  body.dataset.pause = pause ? pause.state : "";
  watchLanding(pause);
  if (pause && pause.state === "paused") showActivity(null); // the agent's call in flight was cancelled
  if (!pause) return;
  const who = pause.by === "agent" ? "The agent asked for a person" : "Paused for a person";
  const waiting = pause.state === "pausing" ? " (waiting for the agent to stop)" : "";
  state.textContent = `${who}${pause.reason ? `: ${pause.reason}` : ""}${waiting}`;
}

// "pausing" turns "paused" when the agent reaches a safe point, and no event says so: read the session until then.
let landingTimer = null;
function watchLanding(pause) {
  clearTimeout(landingTimer);
  if (!pause || pause.state !== "pausing") return;
  landingTimer = setTimeout(() => api(base).then(showSession, (error) => console.warn(error)), POLL_MS);
}

function showOutcome() {
  const outcome = $("outcome");
  if (session.isTaskSuccessful === null || session.isTaskSuccessful === undefined) {
    outcome.replaceChildren();
    return;
  }
  const text = session.isTaskSuccessful ? "succeeded" : `failed${session.failureKind ? `: ${session.failureKind}` : ""}`;
  const badge = el("span", { class: `badge ${session.isTaskSuccessful ? "passed" : "failed"}`, text });
  if (session.lastStepSummary) badge.title = session.lastStepSummary;
  outcome.replaceChildren(badge);
}

// Why the browser went away (spec §21.1): "ended: maintenance", "ended: max_duration", ...
function showEndReason() {
  const line = $("end-reason");
  const reason = TERMINAL.has(session.status) ? session.endReason : null;
  line.textContent = reason ? `ended: ${reason}` : "";
  line.hidden = !reason;
  body.dataset.endReason = reason || "";
}

function showLive(liveUrl) {
  const frame = $("live");
  if (liveUrl) {
    if (frame.dataset.src !== liveUrl) {
      frame.dataset.src = liveUrl;
      frame.src = liveUrl;
    }
    frame.hidden = false;
    $("live-empty").hidden = true;
    return;
  }
  if (frame.dataset.src) {
    delete frame.dataset.src;
    frame.removeAttribute("src");
  }
  frame.hidden = true;
  $("live-empty").hidden = false;
  $("live-empty").textContent =
    session && session.status === "created" ? "Waiting for a browser…" : "No live browser right now.";
}

function showActivity(activity) {
  const line = $("activity");
  if (!activity || !activity.label) {
    line.hidden = true;
    line.replaceChildren();
    return;
  }
  const step = activity.step ? ` (step ${activity.step})` : "";
  line.className = `activity${activity.spin === false ? "" : " spin"}`;
  line.replaceChildren(
    `${activity.label}${step}`,
    activity.stream ? el("span", { class: "activity-stream", text: activity.stream }) : "",
  );
  line.hidden = false;
}

function showCode(code) {
  if (!code || typeof code.code !== "string") return;
  $("code-meta").textContent = `${code.name || "script"} · ${code.status || ""}`;
  $("code-meta").classList.remove("placeholder");
  $("code").textContent = code.code;
  $("code").hidden = false;
}

// -- feed -----------------------------------------------------------------------------------------------------
function addMessage(message) {
  if (!message || seen.has(message.id)) return;
  seen.add(message.id);
  lastId = message.id;
  const panel = $("tab-feed");
  const atBottom = panel.scrollHeight - panel.scrollTop - panel.clientHeight < 40;
  $("feed").append(renderMessage(message, session ? `$${session.totalCostUsd}` : ""));
  if (atBottom) panel.scrollTop = panel.scrollHeight;
  const code = codeFromMessage(message);
  if (code) showCode(code);
  if (changesPause(message) && session) api(base).then(showSession, (error) => console.warn(error));
  body.dataset.messages = String(seen.size);
}

// A pause or resume leaves the status as it was, so the status event does not say so: read the session again.
function changesPause(message) {
  if (message.type !== "event" || !message.data) return false;
  try {
    const data = JSON.parse(message.data);
    return data && data.category === "system" && PAUSE_ACTIONS.has(data.action);
  } catch {
    return false;
  }
}

async function drainMessages() {
  for (;;) {
    const query = lastId ? `?after=${encodeURIComponent(lastId)}&limit=200` : "?limit=200";
    const page = await api(`${base}/messages${query}`);
    page.messages.forEach(addMessage);
    if (!page.hasMore || !page.messages.length) return;
  }
}

// -- live updates: the event stream, else polling --------------------------------------------------------------
function parse(event) {
  try {
    return JSON.parse(event.data);
  } catch {
    return null;
  }
}

function openStream() {
  if (stream) return;
  let opened = false;
  const source = new EventSource(`${base}/events`);
  stream = source;
  source.addEventListener("open", () => {
    opened = true;
    body.dataset.feedMode = "sse";
  });
  source.addEventListener("message", (event) => addMessage(parse(event)));
  source.addEventListener("status", (event) => {
    const status = parse(event);
    if (!status) return;
    const changed = session && status.status !== session.status;
    showSession(status);
    // the event carries no output, title or budget: read the whole session when the status moves
    if (changed) api(base).then(showSession, (error) => console.warn(error));
  });
  source.addEventListener("activity", (event) => showActivity(parse(event)));
  source.addEventListener("code", (event) => showCode(parse(event)));
  source.addEventListener("maintenance_warning", (event) => showMaintenance(parse(event)?.endsAt));
  source.addEventListener("error", () => {
    if (!opened && source.readyState === EventSource.CLOSED) {
      stream = null; // no event stream on this server (404/405): poll instead
      startPolling();
    } else if (session && TERMINAL.has(session.status)) {
      source.close(); // the stream ended with the run; watch for a follow-up from elsewhere
      stream = null;
      schedulePoll(IDLE_POLL_MS, true);
    }
  });
}

function startPolling() {
  body.dataset.feedMode = "poll";
  schedulePoll(POLL_MS, false);
}

function schedulePoll(ms, thenStream) {
  clearTimeout(pollTimer);
  pollTimer = setTimeout(() => poll(thenStream), ms);
}

async function poll(thenStream) {
  try {
    await drainMessages();
    showSession(await api(base));
    await drainMessages();
  } catch (error) {
    console.warn(error);
  }
  const terminal = session !== null && TERMINAL.has(session.status);
  if (thenStream && !terminal) return openStream();
  schedulePoll(terminal ? IDLE_POLL_MS : POLL_MS, thenStream);
}

function resume() {
  if (body.dataset.feedMode === "poll") schedulePoll(0, false);
  else {
    clearTimeout(pollTimer);
    openStream();
  }
}

// -- actions --------------------------------------------------------------------------------------------------
async function stop(strategy) {
  $("action-error").textContent = "";
  try {
    showSession(await api(`${base}/stop`, { method: "POST", body: { strategy } }));
    await drainMessages();
  } catch (error) {
    $("action-error").textContent = error.message;
  }
}

async function pauseOrResume(action) {
  $("action-error").textContent = "";
  try {
    showSession(await api(`${base}/${action}`, { method: "POST", body: {} }));
  } catch (error) {
    $("action-error").textContent = error.message;
  }
}

async function followUp(event) {
  event.preventDefault();
  const task = $("follow-up-task").value.trim();
  $("follow-up-error").textContent = "";
  if (!task) {
    $("follow-up-error").textContent = "Write a task first.";
    return;
  }
  try {
    showSession(await api("/v3/sessions", { method: "POST", body: { sessionId, task } }));
    $("follow-up-task").value = "";
    await drainMessages();
    resume();
  } catch (error) {
    $("follow-up-error").textContent = error.message;
  }
}

function selectTab(name) {
  for (const tab of document.querySelectorAll("[role=tab]")) {
    const selected = tab.dataset.tab === name;
    tab.setAttribute("aria-selected", String(selected));
    $(`tab-${tab.dataset.tab}`).hidden = !selected;
  }
}

async function start() {
  for (const tab of document.querySelectorAll("[role=tab]")) tab.addEventListener("click", () => selectTab(tab.dataset.tab));
  $("stop-task").addEventListener("click", () => stop("task"));
  $("stop-session").addEventListener("click", () => stop("session"));
  $("pause").addEventListener("click", () => pauseOrResume("pause"));
  $("hand-back").addEventListener("click", () => pauseOrResume("resume"));
  $("follow-up").addEventListener("submit", followUp);
  showSession(await api(base));
  await drainMessages();
  openStream();
}

start().catch((error) => {
  $("action-error").textContent = error.message;
  startPolling();
});
