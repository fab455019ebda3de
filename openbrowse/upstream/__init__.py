"""Every place where OpenBrowse relies on, or patches, a third-party library's internals.

Each module wraps one such dependency behind small functions and names the upstream code (module, symbol,
version) it relies on; ``tests/contract/test_upstream_assumptions.py`` checks each assumption against the
installed versions, so bumping browser-use or httpx is a checklist instead of an investigation.

* ``agent_output``: agent steps recognised by browser-use's ``AgentOutput`` type;
* ``anthropic_import``: ``Agent`` built without importing the Anthropic SDK (a ``sys.modules`` stand-in);
* ``registered_actions``: wrapping a registered browser-use action, or the registry's ``execute_action``;
* ``state_fetch``: a one-shot replacement of ``BrowserSession.get_browser_state_summary`` on one instance;
* ``file_system``: registering a file in browser-use's in-memory ``FileSystem``;
* ``httpx_tls``: one shared default TLS context for httpx clients;
* ``key_check``: browser-use's public switch that skips its LLM API-key check.

Nothing here imports OpenBrowse code above ``openbrowse.domain``; importing this package imports no third-party
module (the submodules do).
"""
