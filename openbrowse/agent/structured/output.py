"""One run's structured-output machinery, as the runner sees it (spec §13): store or prose mode, evidence, gate.

The runner builds one :class:`StructuredOutput` per run and calls it at a few points: when building the tools,
after each step (evidence and coverage), when a turn reaches ``done`` (the output), and when a turn ends early
(salvage). Without an ``outputSchema`` every method is a cheap no-op.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openbrowse.agent.prompts import output_format_block
from openbrowse.agent.structured.answer_store import AnswerStore
from openbrowse.agent.structured.completeness import Gate, deficiencies
from openbrowse.agent.structured.evidence import EvidenceCorpus
from openbrowse.agent.structured.schema_model import SchemaUnsupported, convert
from openbrowse.agent.tools.answer import GateReport, install_done_gate, register_answer_tools
from openbrowse.agent.turns.outcome import parse_structured, schema_errors
from openbrowse.agent.turns.steps import category_of
from openbrowse.domain.runs import NOTHING_KEPT, Salvage

if TYPE_CHECKING:
    from browser_use import Tools

logger = logging.getLogger(__name__)

AGENT_DATA = Path("agent") / "browseruse_agent_data"
EVIDENCE_CATEGORIES = frozenset({"read", "code", "network"})
EVIDENCE_ACTIONS = frozenset({"read_file"})
STORE_PROMPT = (
    "This task has an output schema, and an answer store of that shape already exists (empty). Your purpose is "
    "to fill the output, not to memorise: write what the pages show with add_item / add_items_from_file / "
    "update_item(s) / set_field as you go. Golden path for lists: find_links → read_pages → add_items_from_file "
    "→ one update_items → mark_absent (only for fields the source really does not publish, with a reason) → "
    "done. Never guess enum values: they are accepted only when a page you read states them. Every write answers "
    "with a coverage summary: the coverage summary is your verification. done's text is a short note; the store "
    "is the answer."
)
KEPT_VALID = "The output store was schema-valid, so it stands as the answer."
KEPT_PARTIAL = "A partial output is kept."
RESULT_FILE = "result.json"
MTIME_SLACK = 0.05
REVIEW_FILE_LIMIT = 8000
"""File times can trail the wall clock by a tick."""


CAPPED_READOUT = re.compile(r"the full text is saved as (readout_[\w.-]+\.txt)")


class StructuredOutput:
    def __init__(self, schema: dict[str, Any] | None, files_dir: Path) -> None:
        self.schema = schema
        self.files_dir = files_dir
        self.evidence = EvidenceCorpus(files_dir)
        self.store: AnswerStore | None = None
        self.gate: Gate | None = None
        self.prose = False
        self._turn_started = time.time()
        if schema is None:
            return
        try:
            model = convert(schema)
        except SchemaUnsupported as reason:
            logger.info("Output schema runs in prose mode: %s", reason)
            self.prose = True
            return
        self.store = AnswerStore(model, self.evidence, files_dir, self.resolve_file)
        self.gate = Gate(self.store)

    def resolve_file(self, name: str) -> Path:
        """A file the agent saved: its own file system first, then the session file area."""
        base = Path(name).name
        for folder in (self.files_dir / AGENT_DATA, self.files_dir):
            if (folder / base).is_file():
                return folder / base
        return self.files_dir / AGENT_DATA / base

    # -- building ------------------------------------------------------------------------------------------
    def task_suffix(self) -> str:
        if self.schema is not None and self.store is None:
            return output_format_block(json.dumps(self.schema, indent=1))
        return ""

    def prompt_block(self) -> str | None:
        return STORE_PROMPT if self.store is not None else None

    def register(self, tools: Tools[Any], report: GateReport) -> None:
        if self.store is None or self.gate is None:
            return
        register_answer_tools(tools, self.store)
        install_done_gate(tools, self.gate, report)

    def restore(self, previous: Any) -> str | None:
        """Seed the store with an earlier run's output that still fits; the coverage line when it did."""
        if self.store is None or not self.store.restore(previous):
            return None
        return self.store.coverage()

    def new_turn(self) -> None:
        self._turn_started = time.time()
        if self.gate is not None:
            self.gate.new_turn()

    # -- each step -----------------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self.store.version if self.store is not None else 0

    def observe(self, actions: list[str], contents: list[str | None], url: str | None) -> None:
        """Feed the evidence corpus with what the step's reads returned (see ``agent/structured/evidence.py``)."""
        self.evidence.mark_visited(url)
        for name, content in zip(actions, contents, strict=False):
            if content and (category_of(name) in EVIDENCE_CATEGORIES or name in EVIDENCE_ACTIONS):
                self.evidence.ingest(self._uncapped(content), url)

    def _uncapped(self, content: str) -> str:
        """The full text behind a preview the guard layer capped (it saved the whole output to a readout file)."""
        match = CAPPED_READOUT.search(content)
        if match is None:
            return content
        try:
            return self.resolve_file(match.group(1)).read_text("utf-8")
        except OSError:
            return content

    def coverage(self) -> str | None:
        return self.store.coverage() if self.store is not None else None

    def answer_snapshot(self, done_text: str) -> str:
        if self.store is not None:
            return json.dumps(self.store.content(), sort_keys=True, ensure_ascii=False)
        return done_text

    # -- endings -------------------------------------------------------------------------------------------
    def structured_result(self, done_text: str) -> tuple[Any, bool] | None:
        """The output of a successful ``done`` and whether it is schema-valid (None without a schema).

        With a store: its content. Without one (prose mode, §13.6): the JSON in the done text, or else the
        ``result.json`` the agent wrote this turn; the caller runs the one reformat pass if neither validates.
        """
        if self.schema is None:
            return None
        if self.store is not None:
            output, problems = self.store.final_output()
            return output, not problems
        parsed = parse_structured(done_text, self.schema)
        if parsed[1]:
            return parsed
        from_file = self._result_file_value()
        if from_file is not None and not schema_errors(from_file, self.schema):
            return from_file, True
        return parsed if parsed[0] is not None or from_file is None else (from_file, False)

    def text_output(self, done_text: str) -> str:
        """The output of a successful ``done`` without a schema: its text, or this turn's ``result.json`` when the
        text is blank (the agent said everything in the file)."""
        if done_text.strip():
            return done_text
        return self._result_file_text() or done_text

    def review_text(self, done_text: str) -> str:
        """The done text as the reviewer sees it: without a store, with the ``result.json`` written this turn."""
        path = self.result_file() if self.store is None else None
        if path is None:
            return done_text
        try:
            content = path.read_text("utf-8")[:REVIEW_FILE_LIMIT]
        except OSError:
            return done_text
        return f"{done_text}\n\nRESULT FILE (result.json, written by the agent):\n{content}"

    def failed_output(self, done_text: str) -> Any:
        """What an unsuccessful turn (a ``done`` reporting failure, no ``done`` at all, a fatal error) leaves as the
        output: what the store gathered, else the done text."""
        if self.store is not None and not self.store.is_empty():
            return self.store.final_output()[0]
        return done_text or None

    def store_complete(self) -> tuple[Any, bool] | None:
        """§13.7: a non-empty, schema-valid store when the run ended without done: (output, gatePassed)."""
        if self.store is None or self.store.is_empty():
            return None
        output, problems = self.store.final_output()
        if problems:
            return None
        return output, not deficiencies(self.store)

    def salvage(self, done_text: str | None = None) -> Salvage:
        """§13.8, no LLM call: the store when non-empty, else the ``result.json`` the agent wrote this turn, else
        (a stop during review) the output of the ``done`` the turn already reached."""
        if self.store is not None and not self.store.is_empty():
            output, problems = self.store.final_output()
            if not problems:
                return Salvage(output=output, is_task_successful=True, kept=KEPT_VALID)
            count = len(self.store.items)
            kept = f"A partial output of {count} items is kept." if self.store.answer_key else KEPT_PARTIAL
            return Salvage(output=output, is_task_successful=False, kept=kept)
        value = self._result_file_value() if self.schema is not None else self._result_file_text()
        if value is None and done_text and done_text.strip():
            structured = self.structured_result(done_text)
            value = structured[0] if structured is not None and structured[0] is not None else done_text
        if value is None:
            return NOTHING_KEPT
        schema = self.schema
        valid = schema is not None and value not in ("", [], {}) and not schema_errors(value, schema)
        return Salvage(output=value, is_task_successful=valid, kept=KEPT_VALID if valid else KEPT_PARTIAL)

    def result_file(self) -> Path | None:
        """The ``result.json`` the agent wrote during this turn (its file system or a script's), newest first."""
        candidates = []
        for folder in (self.files_dir / AGENT_DATA, self.files_dir):
            path = folder / RESULT_FILE
            try:
                modified = path.stat().st_mtime
            except OSError:
                continue
            if modified >= self._turn_started - MTIME_SLACK:  # an earlier turn's file is not this turn's answer
                candidates.append((modified, path))
        return max(candidates)[1] if candidates else None

    def _result_file_text(self) -> str | None:
        path = self.result_file()
        if path is None:
            return None
        try:
            return path.read_text("utf-8").strip()
        except OSError:
            return None

    def _result_file_value(self) -> Any:
        text = self._result_file_text()
        try:
            return json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            return None
