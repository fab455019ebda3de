// Run form: validates the output schema as JSON while typing, POSTs /v3/sessions, opens the new session.
import { api, el } from "./common.js";

const $ = (id) => document.getElementById(id);

function schemaValue() {
  const text = $("schema").value.trim();
  if (!text) return { value: null, error: "" };
  try {
    const value = JSON.parse(text);
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      return { value: null, error: "The output schema must be a JSON object." };
    }
    return { value, error: "" };
  } catch (error) {
    return { value: null, error: `The output schema is not valid JSON: ${error.message}` };
  }
}

function checkSchema() {
  const { error } = schemaValue();
  $("schema-error").textContent = error;
  $("schema").classList.toggle("invalid", Boolean(error));
  $("schema").setAttribute("aria-invalid", String(Boolean(error)));
  return !error;
}

async function loadProfiles() {
  const select = $("profile");
  try {
    const list = await api("/v3/profiles?page_size=100");
    for (const profile of list.items || []) {
      select.append(el("option", { value: profile.id, text: profile.name ? `${profile.name} (${profile.id})` : profile.id }));
    }
  } catch (error) {
    select.disabled = true;
    $("profile-note").textContent = error.status === 404 || error.status === 405 ? "Profiles are not available on this server." : error.message;
  }
}

async function submit(event) {
  event.preventDefault();
  $("run-error").textContent = "";
  const task = $("task").value.trim();
  if (!task) {
    $("run-error").textContent = "Write a task first.";
    $("task").focus();
    return;
  }
  if (!checkSchema()) {
    $("schema").focus();
    return;
  }
  const body = { task, keepAlive: $("keep-alive").checked };
  if ($("model").value) body.model = $("model").value;
  if ($("effort").value && $("effort").value !== "default") body.reasoningEffort = $("effort").value;
  const budget = $("budget").value.trim();
  if (budget) {
    const amount = Number(budget);
    if (!Number.isFinite(amount) || amount <= 0) {
      $("run-error").textContent = "The budget must be a positive amount in USD.";
      return;
    }
    body.maxCostUsd = amount;
  }
  if ($("profile").value) body.profileId = $("profile").value;
  const schema = schemaValue().value;
  if (schema) body.outputSchema = schema;
  const button = event.submitter || $("run-form").querySelector("button[type=submit]");
  button.disabled = true;
  try {
    const created = await api("/v3/sessions", { method: "POST", body });
    location.assign(`/sessions/${encodeURIComponent(created.id)}`);
  } catch (error) {
    $("run-error").textContent = error.message;
    button.disabled = false;
  }
}

$("schema").addEventListener("input", checkSchema);
$("run-form").addEventListener("submit", submit);
loadProfiles();
