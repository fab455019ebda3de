// What a page can read about the browser (spec §28.2), collected by the fixture page of tests/fakes/looks_site.py.
// Besides BotD's own verdict, it runs the open checks that detectors use beyond BotD (HMaker's selenium-detector,
// deviceandbrowserinfo.com, rebrowser-bot-detector), written here from their published descriptions.
export async function probe() {
  const out = {};
  out.webdriver = navigator.webdriver;
  out.userAgent = navigator.userAgent;
  out.appVersion = navigator.appVersion;
  out.brands = navigator.userAgentData ? navigator.userAgentData.brands.map((b) => b.brand) : null;
  out.platform = navigator.platform;
  out.plugins = Array.from(navigator.plugins, (p) => p.name);
  out.mimeTypes = Array.from(navigator.mimeTypes, (m) => m.type);
  out.pdfViewerEnabled = navigator.pdfViewerEnabled;
  out.chrome = typeof window.chrome === 'object' && window.chrome !== null ? Object.keys(window.chrome).sort() : null;
  out.notification = typeof Notification === 'undefined' ? null : Notification.permission;
  out.notificationQuery = (await navigator.permissions.query({ name: 'notifications' })).state;
  out.language = navigator.language;
  out.languages = Array.from(navigator.languages);
  out.timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  out.intlLocale = Intl.DateTimeFormat().resolvedOptions().locale;
  out.timezoneOffset = new Date(2026, 0, 15).getTimezoneOffset();
  out.hardwareConcurrency = navigator.hardwareConcurrency;
  out.screen = [screen.width, screen.height, screen.colorDepth];
  out.outer = [window.outerWidth, window.outerHeight];
  const gl = document.createElement('canvas').getContext('webgl');
  out.webgl = gl !== null;
  out.webgl2 = document.createElement('canvas').getContext('webgl2') !== null;
  if (gl) {
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    out.webglVendor = info ? gl.getParameter(info.UNMASKED_VENDOR_WEBGL) : gl.getParameter(gl.VENDOR);
    out.webglRenderer = info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
  }
  out.cdpStackGetter = cdpStackGetter();
  out.cdpPrepareStackTrace = cdpPrepareStackTrace();
  out.automationGlobals = Object.getOwnPropertyNames(window).filter((name) =>
    /^(__playwright|__pw|__puppeteer|cdc_|\$cdc_|__webdriver|__selenium|__driver|domAutomation)/.test(name));
  return out;
}

// HMaker's CDPRuntimeDomainTest: a CDP client with the Runtime domain enabled makes V8 serialise console
// arguments at once, reading an Error's `stack`.
function cdpStackGetter() {
  let touched = false;
  const error = new Error('probe');
  Object.defineProperty(error, 'stack', { configurable: false, enumerable: false, get() { touched = true; return ''; } });
  console.debug(error);
  return touched;
}

// deviceandbrowserinfo.com's variant: the same serialisation formats the stack through Error.prepareStackTrace.
function cdpPrepareStackTrace() {
  let called = false;
  const original = Error.prepareStackTrace;
  Error.prepareStackTrace = function (error, frames) { called = true; return original ? original(error, frames) : `${error}`; };
  try { console.log(new Error('')); } finally { Error.prepareStackTrace = original; }
  return called;
}
