"""Which provider key a model needs (no SDK imports, so the API can check it without loading browser-use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openbrowse.llm.catalog import Provider, ResolvedModel

if TYPE_CHECKING:
    from openbrowse.config import Settings

COMPAT_PLACEHOLDER_KEY = "openbrowse-no-key"
"""Sent as the bearer token to a custom OpenAI-compatible endpoint when no OPENAI_API_KEY is configured."""


def missing_provider_key(resolved: ResolvedModel, settings: Settings) -> str | None:
    """The environment variable that must be set before ``resolved`` can run, or ``None`` if nothing is missing."""
    if resolved.provider is Provider.ANTHROPIC:
        return None if settings.ANTHROPIC_API_KEY else "ANTHROPIC_API_KEY"
    if settings.OPENAI_API_KEY:
        return None
    if resolved.provider is Provider.OPENAI_COMPAT and settings.OPENAI_BASE_URL:
        return None
    return "OPENAI_API_KEY"
