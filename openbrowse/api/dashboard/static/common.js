// Shared helpers for the dashboard pages. Data is only ever written with textContent, never as HTML.

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function detailOf(body, status) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail) && body.detail.length) {
    const first = body.detail[0];
    const where = Array.isArray(first.loc) ? first.loc.filter((part) => part !== "body").join(".") : "";
    return where ? `${where}: ${first.msg}` : String(first.msg);
  }
  return `The server answered ${status}.`;
}

// Sends the browser to the login form, to come back here once signed in (the login cookie expired).
export function signInAgain() {
  const here = location.pathname + location.search;
  location.assign("/dashboard/login?next=" + encodeURIComponent(here));
}

// Same-origin call to the API; the browser adds the login cookie (or the Basic credentials) it signed in with.
// A call that changes something carries the login's CSRF token, which the server put into this page.
export async function api(path, { method = "GET", body } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  const csrf = document.body.dataset.csrf;
  if (csrf && !["GET", "HEAD", "OPTIONS"].includes(method)) init.headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 204) return null;
  let parsed = null;
  try {
    parsed = await response.json();
  } catch {
    parsed = null;
  }
  if (response.status === 401 && document.body.dataset.signedIn === "cookie") signInAgain();
  if (!response.ok) throw new ApiError(response.status, detailOf(parsed, response.status));
  return parsed;
}

// el("p", {class: "x", text: "hello", title: "t"}, child, ...): builds an element; text goes to textContent.
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function age(iso, now = Date.now()) {
  const seconds = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= size) return `${Math.floor(seconds / size)} ${unit} ago`;
  }
  return `${seconds} s ago`;
}

export function clockTime(iso) {
  const moment = new Date(iso);
  return Number.isNaN(moment.getTime()) ? "" : moment.toLocaleTimeString();
}

export function statusBadge(status) {
  return el("span", { class: `badge status-${status}`, text: status });
}

export const TERMINAL = new Set(["idle", "stopped", "timed_out", "error", "expired"]);

// Repeats `task` every `ms` milliseconds, never overlapping runs; returns a function that stops it.
export function every(ms, task) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    try {
      await task();
    } catch (error) {
      console.warn(error);
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  timer = setTimeout(tick, ms);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// Offers `text` as a file download (the data never leaves the browser).
export function download(filename, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = el("a", { href: url, download: filename });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// The server drains for maintenance (spec §21.6): one banner at the top of the page, naming the local time.
export function showMaintenance(endsAt) {
  if (typeof endsAt !== "number" || document.getElementById("maintenance-banner")) return;
  const time = new Date(endsAt).toLocaleTimeString();
  const text = `This browser restarts for maintenance at ${time}. Finish what you are doing, then start a new session.`;
  const banner = el("div", { id: "maintenance-banner", class: "maintenance-banner", role: "alert", text });
  document.querySelector("main")?.prepend(banner);
  document.body.dataset.maintenance = String(endsAt);
}

const MAINTENANCE_POLL_MS = 5000;
const stopWatching = every(MAINTENANCE_POLL_MS, async () => {
  const notice = await api("/dashboard/maintenance");
  if (notice && notice.endsAt) {
    showMaintenance(notice.endsAt);
    stopWatching();
  }
});
