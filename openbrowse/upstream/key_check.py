"""browser-use's public switch that skips its LLM API-key check.

Upstream: browser-use 0.13.x, ``browser_use.config.CONFIG.SKIP_LLM_API_KEY_VERIFICATION`` (read from the
environment variable of that name on every access), consulted by ``Agent._verify_and_setup_llm``. Our chat models
are built from keys the server already holds and the check would spend a model call, so it is switched off for
the whole process (``openbrowse.bootstrap``) instead of marking each model class ``_verified_api_keys = True``.
Imports nothing, so it can be read before browser-use is imported.
"""

from __future__ import annotations

SKIP_KEY_CHECK_ENV = "SKIP_LLM_API_KEY_VERIFICATION"
SKIP_KEY_CHECK_VALUE = "true"
