"""Browser tools for ``/v3/mcp`` (spec §23.3): chrome-devtools-mcp's catalog over one shared browser.

* :mod:`.shared`: the seed's lifecycle: one launch shared by concurrent first calls, one context per owner, release,
  retry after a failed launch or context, a closed backend refuses, stopped when idle.
* :mod:`.launcher`: the real launch: a slot-like sandboxed Chromium (its own slot index) and Playwright over CDP.
* :mod:`.pages`: one owner's pages (ids, the selected page, console/network logs, snapshot uids, file area).
* :mod:`.tool_args` and :mod:`.tools`: the catalog: names, descriptions and JSON Schemas, and what each tool does.
* :mod:`.raw`: the same tools on a raw browser (``browserId``), attached to its default context.
"""
