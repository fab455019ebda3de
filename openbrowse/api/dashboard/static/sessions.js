// Sessions list: the server renders the first state; this keeps it live by polling the same page of the API.
import { age, api, el, every, statusBadge } from "./common.js";

const REFRESH_MS = 3000;
const body = document.body;
const page = Number(body.dataset.pageNumber || "1");
const pageSize = Number(body.dataset.pageSize || "20");

function row(session) {
  return el(
    "tr",
    { dataset: { id: session.id } },
    el("td", { class: "col-status" }, statusBadge(session.status)),
    el(
      "td",
      { class: "col-title" },
      el("a", { href: `/sessions/${encodeURIComponent(session.id)}`, text: session.title || "(no task yet)" }),
    ),
    el("td", { class: "col-model", text: session.model }),
    el("td", { class: "col-cost", text: `$${session.totalCostUsd}` }),
    el("td", { class: "col-age" }, el("time", { datetime: session.createdAt, text: age(session.createdAt) })),
    el("td", { class: "col-steps", text: session.stepCount }),
  );
}

function emptyRow() {
  return el(
    "tr",
    { class: "empty" },
    el("td", { colspan: 6 }, "No sessions yet. ", el("a", { href: "/run", text: "Start a run" }), "."),
  );
}

async function refresh() {
  const list = await api(`/v3/sessions?page=${page}&page_size=${pageSize}`);
  const rows = document.getElementById("rows");
  rows.replaceChildren(...(list.sessions.length ? list.sessions.map(row) : [emptyRow()]));
  const pages = Math.max(1, Math.ceil(list.total / pageSize));
  document.getElementById("page-info").textContent = `Page ${page} of ${pages} · ${list.total} sessions`;
  document.getElementById("prev").hidden = page <= 1;
  document.getElementById("next").hidden = page >= pages;
  body.dataset.refreshed = String(Date.now());
}

every(REFRESH_MS, refresh);
