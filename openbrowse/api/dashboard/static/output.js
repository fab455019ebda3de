// A session's output: a table when it is a list of records, with downloads as JSON and CSV.
import { download, el } from "./common.js";

const isRecord = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

// The records to tabulate: a top-level array of objects, or the first list-valued property of an object.
export function recordsOf(output) {
  if (Array.isArray(output)) return output.length && output.every(isRecord) ? { key: null, rows: output } : null;
  if (!isRecord(output)) return null;
  for (const [key, value] of Object.entries(output)) {
    if (Array.isArray(value) && value.length && value.every(isRecord)) return { key, rows: value };
  }
  return null;
}

function columnsOf(rows) {
  const seen = new Set();
  for (const row of rows) for (const key of Object.keys(row)) seen.add(key);
  return [...seen];
}

function cellText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function csvCell(value) {
  let text = cellText(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`; // keeps spreadsheets from running it as a formula
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(rows) {
  const columns = columnsOf(rows);
  const lines = [columns.map(csvCell).join(",")];
  for (const row of rows) lines.push(columns.map((column) => csvCell(row[column])).join(","));
  return lines.join("\r\n") + "\r\n";
}

function table(rows) {
  const columns = columnsOf(rows);
  return el(
    "div",
    { class: "scroll-x" },
    el(
      "table",
      { class: "output-table" },
      el("thead", {}, el("tr", {}, ...columns.map((column) => el("th", { text: column })))),
      el("tbody", {}, ...rows.map((row) => el("tr", {}, ...columns.map((column) => el("td", { text: cellText(row[column]) }))))),
    ),
  );
}

export function renderOutput(container, output, sessionId) {
  if (output === null || output === undefined || output === "") {
    container.replaceChildren(el("p", { class: "placeholder", text: "No output yet." }));
    return;
  }
  const records = recordsOf(output);
  const json = typeof output === "string" ? output : JSON.stringify(output, null, 2);
  const buttons = el(
    "div",
    { class: "actions" },
    el("button", {
      type: "button",
      id: "download-json",
      text: "Download JSON",
      onclick: () => download(`${sessionId}.json`, JSON.stringify(output, null, 2), "application/json"),
    }),
    records
      ? el("button", {
          type: "button",
          id: "download-csv",
          text: "Download CSV",
          onclick: () => download(`${sessionId}.csv`, toCsv(records.rows), "text/csv"),
        })
      : null,
  );
  const parts = [buttons];
  if (records) {
    parts.push(el("p", { class: "hint", text: `${records.rows.length} records${records.key ? ` in “${records.key}”` : ""}` }));
    parts.push(table(records.rows));
  }
  parts.push(records ? el("details", {}, el("summary", { text: "Raw output" }), el("pre", { text: json })) : el("pre", { class: "output-text", text: json }));
  container.replaceChildren(...parts);
}
