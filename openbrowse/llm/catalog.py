"""The model catalog: supported ids, name resolution, reasoning ladders, defaults and prices (spec §10.7, §16.1).

Pure data and pure functions; no SDK imports. ``resolve_model`` and ``resolve_effort`` raise
:class:`~openbrowse.errors.InvalidRequest` with the exact one-sentence messages the API returns as 422s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Literal

from openbrowse.errors import InvalidRequest


class Provider(StrEnum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    OPENAI_COMPAT = "openai_compat"


EFFORTS: tuple[str, ...] = ("default", "none", "low", "medium", "high", "xhigh", "max")
LADDER_FULL: tuple[str, ...] = ("low", "medium", "high", "xhigh", "max")
LADDER_CLASSIC: tuple[str, ...] = ("low", "medium", "high")

ThinkingStyle = Literal["adaptive", "budget", "openai", "compat"]


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: Decimal
    cache_read: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal | None
    output: Decimal


def _price(inp: str, read: str, w5: str, w1h: str | None, out: str) -> Price:
    return Price(Decimal(inp), Decimal(read), Decimal(w5), Decimal(w1h) if w1h else None, Decimal(out))


@dataclass(frozen=True, slots=True)
class ModelSpec:
    id: str
    provider: Provider
    ladder: tuple[str, ...]
    can_disable: bool
    default_effort: str
    thinking: ThinkingStyle
    price: Price
    long_context_price: Price | None = None
    bu_name: str | None = None
    """The dotted spelling on Browser Use's own model list, when the model is on it."""

    @property
    def accepted_efforts(self) -> tuple[str, ...]:
        return ("default", "none", *self.ladder) if self.can_disable else ("default", *self.ladder)


_OPUS = _price("5", "0.5", "6.25", "10", "25")
_FABLE = _price("10", "1", "12.5", "20", "50")

MODELS: dict[str, ModelSpec] = {
    spec.id: spec
    for spec in (
        ModelSpec("claude-fable-5", Provider.ANTHROPIC, LADDER_FULL, False, "high", "adaptive", _FABLE),
        ModelSpec("claude-mythos-5", Provider.ANTHROPIC, LADDER_FULL, False, "high", "adaptive", _FABLE),
        ModelSpec("claude-opus-5", Provider.ANTHROPIC, LADDER_FULL, True, "medium", "adaptive", _OPUS),
        ModelSpec(
            "claude-sonnet-5",
            Provider.ANTHROPIC,
            LADDER_FULL,
            True,
            "high",
            "adaptive",
            _price("2", "0.2", "2.5", "4", "10"),
            bu_name="claude-sonnet-5",
        ),
        ModelSpec(
            "claude-opus-4-8",
            Provider.ANTHROPIC,
            LADDER_FULL,
            True,
            "none",
            "adaptive",
            _OPUS,
            bu_name="claude-opus-4.8",
        ),
        ModelSpec(
            "claude-opus-4-7",
            Provider.ANTHROPIC,
            LADDER_CLASSIC,
            True,
            "none",
            "budget",
            _OPUS,
            bu_name="claude-opus-4.7",
        ),
        ModelSpec(
            "claude-opus-4-6",
            Provider.ANTHROPIC,
            LADDER_CLASSIC,
            True,
            "none",
            "budget",
            _OPUS,
            bu_name="claude-opus-4.6",
        ),
        ModelSpec(
            "claude-sonnet-4-6",
            Provider.ANTHROPIC,
            LADDER_CLASSIC,
            True,
            "none",
            "budget",
            _price("3", "0.3", "3.75", "6", "15"),
        ),
        ModelSpec(
            "gpt-5.6-sol",
            Provider.OPENAI,
            LADDER_FULL,
            True,
            "none",
            "openai",
            _price("5", "0.5", "6.25", None, "30"),
            _price("10", "1", "12.5", None, "45"),
            bu_name="gpt-5.6-sol",
        ),
        ModelSpec(
            "gpt-5.6-terra",
            Provider.OPENAI,
            LADDER_FULL,
            True,
            "none",
            "openai",
            _price("2", "0.2", "2.5", None, "12"),
            _price("4", "0.4", "5", None, "18"),
            bu_name="gpt-5.6-terra",
        ),
        ModelSpec(
            "gpt-5.6-luna",
            Provider.OPENAI,
            LADDER_FULL,
            True,
            "max",
            "openai",
            _price("0.2", "0.02", "0.25", None, "1.2"),
            _price("0.4", "0.04", "0.5", None, "1.8"),
            bu_name="gpt-5.6-luna",
        ),
    )
}

LONG_CONTEXT_THRESHOLD = 272_000
"""OpenAI gpt-5.6 requests whose prompt exceeds this many tokens are billed at the long-context tariff."""

_FREE = _price("0", "0", "0", None, "0")
COMPAT_PREFIX = "openai/"
ONE_MILLION_SUFFIX = "[1m]"
BU_TIERS = ("bu-mini", "bu-max", "bu-ultra")
_VERSION_DOTS = re.compile(r"(?<=\d)\.(?=\d)")


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A request's model after name resolution."""

    spec: ModelSpec
    llm_id: str
    """Canonical id the provider is called with (``[1m]`` suffix kept; ``openai/`` prefix kept)."""
    echo: str
    """What the Session's ``model`` field shows."""

    @property
    def provider(self) -> Provider:
        return self.spec.provider

    @property
    def one_million_context(self) -> bool:
        return self.llm_id.endswith(ONE_MILLION_SUFFIX)

    @property
    def wire_name(self) -> str:
        """The model name sent to the provider."""
        name = self.llm_id.removesuffix(ONE_MILLION_SUFFIX)
        return name.removeprefix(COMPAT_PREFIX) if self.provider is Provider.OPENAI_COMPAT else name


def _compat_spec(model_id: str) -> ModelSpec:
    return ModelSpec(model_id, Provider.OPENAI_COMPAT, (), False, "default", "compat", _FREE)


def _canonical(name: str) -> str | None:
    """Map a spelling to a catalog id: dots and dashes are interchangeable in version numbers."""
    lowered = name.strip().lower()
    if lowered in MODELS:
        return lowered
    dashed = _VERSION_DOTS.sub("-", lowered)
    for model_id in MODELS:
        if _VERSION_DOTS.sub("-", model_id) == dashed:
            return model_id
    return None


def default_model_id(default_model: str | None, has_openai_key: bool, has_anthropic_key: bool) -> str:
    if default_model:
        return default_model
    if has_openai_key:
        return "gpt-5.6-terra"
    if has_anthropic_key:
        return "claude-sonnet-5"
    return "gpt-5.6-terra"


def _tier_target(tier: str, configured: list[ModelSpec], default_id: str) -> str:
    if tier == "bu-max":
        return default_id
    candidates = configured or list(MODELS.values())

    def cost(spec: ModelSpec) -> Decimal:
        return spec.price.input + spec.price.output

    chosen = min(candidates, key=cost) if tier == "bu-mini" else max(candidates, key=cost)
    return chosen.id


def resolve_model(
    requested: str | None,
    *,
    default_model: str | None = None,
    has_openai_key: bool = False,
    has_anthropic_key: bool = False,
) -> ResolvedModel:
    """Resolve a requested model name (or none) to a catalog entry; 422-style error if unsupported."""
    default_id = default_model_id(default_model, has_openai_key, has_anthropic_key)
    if requested is None:
        resolved = resolve_model(default_id, has_openai_key=has_openai_key, has_anthropic_key=has_anthropic_key)
        return ResolvedModel(resolved.spec, resolved.llm_id, resolved.spec.bu_name or resolved.llm_id)
    name = requested.strip()
    if name.lower() in BU_TIERS:
        configured = [
            spec
            for spec in MODELS.values()
            if (spec.provider is Provider.OPENAI and has_openai_key)
            or (spec.provider is Provider.ANTHROPIC and has_anthropic_key)
        ]
        target = _tier_target(name.lower(), configured, default_id)
        resolved = resolve_model(target, has_openai_key=has_openai_key, has_anthropic_key=has_anthropic_key)
        return ResolvedModel(resolved.spec, resolved.llm_id, name.lower())
    if name.lower().startswith(COMPAT_PREFIX) and len(name) > len(COMPAT_PREFIX):
        return ResolvedModel(_compat_spec(name), name, name)
    base, suffix = name, ""
    if name.lower().endswith(ONE_MILLION_SUFFIX):
        base, suffix = name[: -len(ONE_MILLION_SUFFIX)], ONE_MILLION_SUFFIX
    model_id = _canonical(base)
    if model_id is None or (suffix and MODELS[model_id].provider is not Provider.ANTHROPIC):
        raise InvalidRequest(f"'{requested}' is not a valid model.")
    spec = MODELS[model_id]
    echo = (spec.bu_name + suffix) if spec.bu_name else name
    return ResolvedModel(spec, model_id + suffix, echo)


def same_model(a: str, b: str) -> bool:
    """True when two catalog ids name the same model (used by the follow-up restart check)."""
    return a == b


THINKING_LEVEL_TO_EFFORT = {"disabled": "none", "low": "low", "medium": "medium", "high": "high"}


def resolve_effort(spec: ModelSpec, requested: str | None) -> str:
    """Validate a reasoning effort for ``spec`` and return the effort actually sent."""
    effort = (requested or "default").strip().lower()
    if effort not in EFFORTS:
        raise InvalidRequest(
            f"'{requested}' is not a valid reasoningEffort. Valid values: {', '.join(spec.accepted_efforts)}."
        )
    if effort == "none" and not spec.can_disable and spec.provider is not Provider.OPENAI_COMPAT:
        raise InvalidRequest(
            f"reasoning cannot be disabled on {spec.id}. Valid values: {', '.join(spec.accepted_efforts)}."
        )
    if effort not in spec.accepted_efforts:
        raise InvalidRequest(
            f"reasoningEffort '{effort}' is not supported on {spec.id}. "
            f"Valid values: {', '.join(spec.accepted_efforts)}."
        )
    return spec.default_effort if effort == "default" else effort


def preflight_effort(spec: ModelSpec) -> str:
    """The goal pre-flight runs with reasoning off where the model allows it, else at its default."""
    return "none" if spec.can_disable else spec.default_effort
