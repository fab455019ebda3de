"""JavaScript that reads a page or frame: run by the host's ``browser`` helpers and by the server's readers (the
server imports it from here, since the host may import nothing of the server)."""

from __future__ import annotations

READ_PAGE = """
(() => {
  const jsonld = [];
  for (const s of document.querySelectorAll('script[type="application/ld+json"]')) {
    try { jsonld.push(JSON.parse(s.textContent)); } catch (e) {}
  }
  const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.href)
    .filter(h => h.startsWith('http')).slice(0, 500);
  const text = (document.body ? document.body.innerText : '') || '';
  return {url: location.href, title: document.title, text: text.slice(0, 60000), jsonld, links,
          readyState: document.readyState, textChars: text.length,
          iframes: document.querySelectorAll('iframe').length};
})()
"""
