"""Task templates of cached scripts (spec §27.3): ``@{{value}}`` brackets, the template and its parameters.

``"Find the price of @{{Blue Widget}} in @{{EUR}}"`` has the template ``"Find the price of {{0}} in {{1}}"`` and
the parameters ``["Blue Widget", "EUR"]``; the agent sees ``"Find the price of Blue Widget in EUR"``. Runs of one
template with any values share one script, kept under a name made from the template and the output schema.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["CacheTemplate", "caching_wanted", "parse_template"]

_BRACKETS = re.compile(r"@\{\{(.*?)\}\}", re.DOTALL)


@dataclass(frozen=True, slots=True)
class CacheTemplate:
    template: str
    """The task with each ``@{{value}}`` replaced by ``{{n}}``."""
    values: tuple[str, ...]
    agent_task: str
    """The task the agent sees: the values in place, the brackets removed."""

    def key(self, output_schema: dict[str, Any] | None) -> str:
        """The script's name in the workspace's ``scripts/`` (one per template and output shape)."""
        material = json.dumps([self.template, output_schema], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(material.encode("utf-8")).hexdigest()[:24]


def parse_template(task: str) -> CacheTemplate:
    values: list[str] = []

    def number(match: re.Match[str]) -> str:
        values.append(match.group(1))
        return f"{{{{{len(values) - 1}}}}}"

    template = _BRACKETS.sub(number, task)
    return CacheTemplate(template, tuple(values), _BRACKETS.sub(lambda match: match.group(1), task))


def caching_wanted(cache_script: bool | None, template: CacheTemplate, has_workspace: bool) -> bool:
    """``cacheScript``: true caches the exact task, false never, null a templated task on a workspace."""
    if not has_workspace or cache_script is False:
        return False
    return cache_script is True or bool(template.values)
