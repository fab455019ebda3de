// Raw browsers (spec §19.1): the live ones, each with its live view, refreshed every few seconds.
import { age, api, el, every } from "./common.js";

const REFRESH_MS = 4000;
const $ = (id) => document.getElementById(id);
const shown = new Map(); // id -> list item, kept across refreshes so live views do not reconnect

function item(browser) {
  const frame = el("iframe", { src: browser.liveUrl, title: `Live view of browser ${browser.id}` });
  const stopButton = el("button", {
    type: "button",
    class: "danger",
    text: "Stop",
    onclick: async () => {
      stopButton.disabled = true;
      try {
        await api(`/v3/browsers/${encodeURIComponent(browser.id)}`, { method: "PATCH", body: { action: "stop" } });
      } finally {
        await refresh();
      }
    },
  });
  return el(
    "li",
    { dataset: { id: browser.id } },
    el("div", { class: "bar" }, el("code", { text: browser.id }), stopButton),
    el("p", { class: "meta", text: `started ${age(browser.startedAt)} · stops at ${new Date(browser.timeoutAt).toLocaleString()}` }),
    browser.liveUrl ? el("div", { class: "live-box" }, frame) : el("p", { class: "placeholder", text: "No live view." }),
  );
}

async function refresh() {
  const list = await api("/v3/browsers?pageSize=100&filterBy=active");
  const live = (list.items || []).filter((browser) => browser.status === "active");
  const ids = new Set(live.map((browser) => browser.id));
  for (const [id, node] of shown) {
    if (!ids.has(id)) {
      node.remove();
      shown.delete(id);
    }
  }
  for (const browser of live) {
    if (!shown.has(browser.id)) {
      const node = item(browser);
      shown.set(browser.id, node);
      $("browsers").append(node);
    }
  }
  $("browsers-note").textContent = live.length ? `${live.length} live` : "No live browsers.";
  document.body.dataset.browsers = String(live.length);
}

refresh().catch((error) => ($("browsers-note").textContent = error.message));
every(REFRESH_MS, refresh);
