// Raw browsers (spec §19.1): the live ones, each with its live view, Stop and a person's takeover (spec §21.5:
// Pause, then Take over through the takeover link and Hand back), and the recently ended ones with their state and
// end reason. Refreshed every few seconds.
import { age, api, el, every } from "./common.js";

const REFRESH_MS = 4000;
const ENDED_SHOWN = 10;
const $ = (id) => document.getElementById(id);
const shown = new Map(); // id -> {node, update}, kept across refreshes so live views do not reconnect

const pathOf = (browser, action = "") => `/v3/browsers/${encodeURIComponent(browser.id)}${action}`;

function item(initial) {
  let browser = initial;
  const error = el("span", { class: "error", role: "alert" });
  const act = (button, call) => async () => {
    button.disabled = true;
    error.textContent = "";
    try {
      update(await call());
    } catch (failure) {
      error.textContent = failure.message;
    } finally {
      button.disabled = false;
    }
  };
  const stopButton = el("button", { type: "button", class: "danger", text: "Stop" });
  stopButton.addEventListener("click", async () => {
    stopButton.disabled = true;
    try {
      await api(pathOf(browser), { method: "PATCH", body: { action: "stop" } });
    } finally {
      await refresh();
    }
  });
  const pauseButton = el("button", { type: "button", class: "pause", text: "Pause" });
  pauseButton.addEventListener("click", act(pauseButton, () => api(pathOf(browser, "/pause"), { method: "POST", body: {} })));
  const handBack = el("button", { type: "button", class: "hand-back", text: "Hand back" });
  handBack.addEventListener("click", act(handBack, () => api(pathOf(browser, "/resume"), { method: "POST", body: {} })));
  const takeOver = el("a", { class: "button primary take-over", target: "_blank", rel: "noopener", text: "Take over" });
  const stateBadge = el("span", { class: "badge" });
  const pauseState = el("span", { class: "placeholder pause-state" });
  const frame = el("iframe", { src: initial.liveUrl, title: `Live view of browser ${initial.id}` });
  const node = el(
    "li",
    { dataset: { id: initial.id } },
    el("div", { class: "bar" }, el("code", { text: initial.id }), stateBadge),
    el("p", { class: "meta", text: `started ${age(initial.startedAt)} · stops at ${new Date(initial.timeoutAt).toLocaleString()}` }),
    el("div", { class: "actions" }, pauseButton, takeOver, handBack, stopButton, pauseState, error),
    initial.liveUrl ? el("div", { class: "live-box" }, frame) : el("p", { class: "placeholder", text: "No live view." }),
  );

  function update(next) {
    browser = { ...browser, ...next };
    const pause = browser.pause || null;
    stateBadge.className = `badge state-${browser.state}`;
    stateBadge.textContent = browser.state;
    node.dataset.state = browser.state;
    node.dataset.pause = pause ? pause.state : "";
    pauseButton.hidden = Boolean(pause) || browser.state !== "live";
    handBack.hidden = !pause;
    takeOver.hidden = !(pause && browser.takeoverUrl);
    if (pause && browser.takeoverUrl) takeOver.href = browser.takeoverUrl;
    else takeOver.removeAttribute("href");
    pauseState.hidden = !pause;
    pauseState.textContent = pause ? `Paused for a person${pause.reason ? `: ${pause.reason}` : ""}` : "";
  }

  update(initial);
  return { node, update };
}

function endedItem(browser) {
  const when = browser.finishedAt ? ` · ended ${age(browser.finishedAt)}` : "";
  return el(
    "li",
    { dataset: { id: browser.id, state: browser.state, endReason: browser.endReason || "" } },
    el("code", { text: browser.id }),
    " ",
    el("span", { class: `badge state-${browser.state}`, text: browser.state }),
    el("span", { class: "end-reason", text: ` ${browser.endReason ? `ended: ${browser.endReason}` : ""}${when}` }),
  );
}

async function refresh() {
  const [list, ended] = await Promise.all([
    api("/v3/browsers?pageSize=100&filterBy=active"),
    api(`/v3/browsers?pageSize=${ENDED_SHOWN}&filterBy=stopped`),
  ]);
  const live = (list.items || []).filter((browser) => browser.status === "active");
  const ids = new Set(live.map((browser) => browser.id));
  for (const [id, entry] of shown) {
    if (!ids.has(id)) {
      entry.node.remove();
      shown.delete(id);
    }
  }
  for (const browser of live) {
    const entry = shown.get(browser.id);
    if (entry) entry.update(browser);
    else {
      const created = item(browser);
      shown.set(browser.id, created);
      $("browsers").append(created.node);
    }
  }
  $("browsers-note").textContent = live.length ? `${live.length} live` : "No live browsers.";
  $("ended-browsers").replaceChildren(...(ended.items || []).map(endedItem));
  $("ended-note").hidden = Boolean((ended.items || []).length);
  document.body.dataset.browsers = String(live.length);
}

refresh().catch((error) => ($("browsers-note").textContent = error.message));
every(REFRESH_MS, refresh);
