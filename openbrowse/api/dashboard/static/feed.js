// One feed message (spec §5.2) as a card. Everything shown comes from pages the agent visited, so it is text only.
import { clockTime, el } from "./common.js";

function parseData(message) {
  if (!message.data) return {};
  try {
    const value = JSON.parse(message.data);
    return value && typeof value === "object" ? value : {};
  } catch {
    return {};
  }
}

function card(kind, title, message, ...children) {
  return el(
    "li",
    { class: `card kind-${kind}`, dataset: { id: message.id, type: message.type } },
    el("header", {}, ...(Array.isArray(title) ? title : [title]), el("span", { class: "when", text: clockTime(message.createdAt) })),
    ...children,
  );
}

function field(label, text) {
  if (!text) return null;
  return el("p", {}, el("span", { class: "label", text: label }), String(text));
}

function folded(label, text) {
  if (!text) return null;
  return el("details", {}, el("summary", { text: label }), el("pre", { text: String(text) }));
}

function chips(names) {
  if (!Array.isArray(names) || !names.length) return null;
  return el("div", { class: "chips" }, ...names.map((name) => el("span", { class: "chip", text: name })));
}

function stepCard(message, data, isError) {
  const heading = [
    el("span", { text: data.step ? `Step ${data.step}` : "Step" }),
    data.category ? el("span", { class: "badge", text: data.category }) : null,
  ];
  const seconds = typeof data.durationSeconds === "number" ? `${data.durationSeconds.toFixed(1)} s` : null;
  return card(
    isError ? "error" : "step",
    heading,
    message,
    isError ? el("p", { class: "error", text: message.summary }) : null,
    field("See", data.see),
    field("Plan", data.plan),
    field("Next", data.next),
    !data.see && !data.plan && !data.next && !isError ? el("p", { text: message.summary }) : null,
    chips(data.actions),
    field("Stored", data.coverage),
    field("Review", data.reviewReply),
    folded("Tool result", data.resultSnippet),
    folded("Error details", data.errorFull),
    folded("Thinking", data.thinking),
    seconds ? el("p", { class: "hint", text: seconds }) : null,
  );
}

function verdictBadge(data) {
  const verdict = String(data.verdict || "").toLowerCase();
  if (!verdict) return null;
  const passed = verdict === "pass";
  return el("span", { class: `badge ${passed ? "passed" : "failed"}`, text: passed ? "pass" : verdict });
}

function eventCard(message, data) {
  switch (data.category) {
    case "goal":
      return card("goal", "Goal", message, el("p", { text: message.summary }));
    case "judge":
      return card(
        "judge",
        [el("span", { text: "Judge" }), verdictBadge(data)],
        message,
        el("p", { text: message.summary }),
        data.recorded ? field("Recorded", data.recorded) : null,
      );
    case "reasoning":
      return card("note", "Reasoning", message, el("p", { text: message.summary }), folded("Reasoning", data.reasoning));
    default:
      return card("note", data.category ? data.category[0].toUpperCase() + data.category.slice(1) : "Event", message,
        el("p", { text: message.summary }), folded("Code", data.code));
  }
}

function completionCard(message, data, costText) {
  return card(
    "completion",
    "Result",
    message,
    el("p", { text: message.summary }),
    folded("Output", data.output),
    costText ? field("Cost so far", costText) : null,
  );
}

// `costText` is the session's total cost when the card is drawn (shown on completion cards).
export function renderMessage(message, costText) {
  const data = parseData(message);
  switch (message.type) {
    case "user_message":
      return card("task", "Task", message, el("p", { text: message.summary }));
    case "planning":
      return card("note", "Browser", message, el("p", { text: message.summary }));
    case "browser_action":
    case "result":
      return stepCard(message, data, false);
    case "browser_action_error":
      return stepCard(message, data, true);
    case "event":
      return eventCard(message, data);
    case "completion":
      return completionCard(message, data, costText);
    default:
      return card("note", message.type, message, el("p", { text: message.summary }));
  }
}

// The script a `code` feed event carries, if any (when the event stream is not available).
export function codeFromMessage(message) {
  if (message.type !== "event") return null;
  const data = parseData(message);
  if (data.category !== "code" || typeof data.code !== "string") return null;
  return { name: data.name || data.file || "script", code: data.code, status: data.action === "run" ? "Running" : "Writing" };
}
