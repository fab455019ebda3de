// Profiles: list, import a storage state (PUT) from a file, export one (GET) as a download, create an empty one.
import { age, api, download, el } from "./common.js";

const $ = (id) => document.getElementById(id);

function row(profile) {
  const domains = Array.isArray(profile.cookieDomains) ? profile.cookieDomains.join(", ") : "(unreadable)";
  return el(
    "tr",
    { dataset: { id: profile.id } },
    el("td", { text: profile.name || "(unnamed)" }),
    el("td", {}, el("code", { text: profile.id })),
    el("td", { text: domains || "none" }),
    el("td", { text: profile.lastUsedAt ? age(profile.lastUsedAt) : "never" }),
    el("td", {}, el("button", { type: "button", class: "export", text: "Export", onclick: () => exportState(profile.id) })),
  );
}

async function exportState(id) {
  try {
    const state = await api(`/v3/profiles/${encodeURIComponent(id)}/storage-state`);
    download(`${id}.storage-state.json`, JSON.stringify(state, null, 2), "application/json");
  } catch (error) {
    $("profiles-note").hidden = false;
    $("profiles-note").textContent = `Export failed: ${error.message}`;
  }
}

async function refresh() {
  let list;
  try {
    list = await api("/v3/profiles?page_size=100");
  } catch (error) {
    $("profiles-ui").hidden = true;
    $("profiles-note").textContent =
      error.status === 404 || error.status === 405
        ? "Profiles are unavailable on this server."
        : `Profiles could not be loaded: ${error.message}`;
    document.body.dataset.profiles = "unavailable";
    return;
  }
  const items = list.items || [];
  $("profile-rows").replaceChildren(
    ...(items.length ? items.map(row) : [el("tr", {}, el("td", { colspan: 5, text: "No profiles yet." }))]),
  );
  $("profiles-note").hidden = true;
  $("profiles-ui").hidden = false;
  document.body.dataset.profiles = "available";
}

async function importState(event) {
  event.preventDefault();
  const id = $("import-id").value.trim();
  const file = $("import-file").files[0];
  $("import-result").textContent = "";
  if (!id || !/^[A-Za-z0-9._-]+$/.test(id) || id.includes("..")) {
    $("import-result").textContent = "Use letters, digits, dots, dashes and underscores for the id.";
    return;
  }
  if (!file) {
    $("import-result").textContent = "Choose a storage-state JSON file.";
    return;
  }
  let state;
  try {
    state = JSON.parse(await file.text());
  } catch (error) {
    $("import-result").textContent = `The file is not valid JSON: ${error.message}`;
    return;
  }
  try {
    const profile = await api(`/v3/profiles/${encodeURIComponent(id)}/storage-state`, { method: "PUT", body: state });
    $("import-result").textContent = `Imported into ${profile.id}.`;
    $("import-form").reset();
    await refresh();
  } catch (error) {
    $("import-result").textContent = `Import failed: ${error.message}`;
  }
}

async function create(event) {
  event.preventDefault();
  const name = $("create-name").value.trim();
  try {
    const profile = await api("/v3/profiles", { method: "POST", body: name ? { name } : {} });
    $("create-result").textContent = `Created ${profile.id}.`;
    $("create-form").reset();
    await refresh();
  } catch (error) {
    $("create-result").textContent = `Could not create it: ${error.message}`;
  }
}

$("import-form").addEventListener("submit", importState);
$("create-form").addEventListener("submit", create);
refresh();
