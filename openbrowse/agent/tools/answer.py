"""The store actions (spec §13.3) and the gated ``done`` (spec §13.5), registered on browser-use's ``Tools``.

Each action is a thin shell over :class:`~openbrowse.agent.structured.answer_store.AnswerStore`: a refusal becomes the
action's error, a success its content (ending with the coverage line).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult
from pydantic import BaseModel, Field

from openbrowse.agent.structured.answer_store import AnswerStore, StoreError
from openbrowse.agent.structured.completeness import Gate, bounce_message, gate_text, review_block
from openbrowse.llm.replies.parsing import first_json_value
from openbrowse.upstream.registered_actions import ActionFunction, register_action, wrap_action

if TYPE_CHECKING:
    from browser_use import Tools

STORE_ACTIONS = (
    "add_item",
    "update_item",
    "update_items",
    "set_field",
    "remove_items",
    "mark_absent",
    "read_output",
    "search_output",
    "add_items_from_file",
    "update_items_from_file",
)


class AddItemParams(BaseModel):
    item: dict[str, Any] = Field(description="One item of the answer list, with the fields the pages show.")


class UpdateItemParams(BaseModel):
    index: int = Field(description="0-based index of the item.")
    fields: dict[str, Any] = Field(description="Fields to merge into the item.")


class ItemUpdate(BaseModel):
    index: int
    fields: dict[str, Any]


class UpdateItemsParams(BaseModel):
    updates: list[ItemUpdate] = Field(description="Many updates at once; a failing entry does not stop the rest.")


class SetFieldParams(BaseModel):
    key: str = Field(description="A top-level field of the output that is not the answer list.")
    value: Any = Field(description="Its value.")


class RemoveItemsParams(BaseModel):
    indices: list[int]
    reason: str


class MarkAbsentParams(BaseModel):
    fields: list[str] = Field(description="Fields the source does not publish.")
    reason: str = Field(description="Why: what the pages show instead.")


class ReadOutputParams(BaseModel):
    offset: int = 0
    limit: int = 20
    index: int | None = None
    fields: list[str] | None = None


class SearchOutputParams(BaseModel):
    query: str


class FileParams(BaseModel):
    name: str = Field(description="A saved JSON file holding an array of items.")


def _result(call: Callable[[], str], *, memory: str) -> ActionResult:
    try:
        message = call()
    except StoreError as refusal:
        return ActionResult(error=str(refusal))
    return ActionResult(extracted_content=message, long_term_memory=f"{memory}: {message[-600:]}")


def register_answer_tools(tools: Tools[Any], store: AnswerStore) -> None:
    @register_action(tools, "Append one item to the output's answer list (validated live).", param_model=AddItemParams)
    async def add_item(params: AddItemParams) -> ActionResult:
        return _result(lambda: store.add_item(params.item), memory="add_item")

    @register_action(tools, "Merge fields into one item of the answer list.", param_model=UpdateItemParams)
    async def update_item(params: UpdateItemParams) -> ActionResult:
        return _result(lambda: store.update_item(params.index, params.fields), memory="update_item")

    @register_action(tools, "Merge fields into many items at once.", param_model=UpdateItemsParams)
    async def update_items(params: UpdateItemsParams) -> ActionResult:
        updates = [u.model_dump() for u in params.updates]
        return _result(lambda: store.update_items(updates), memory="update_items")

    @register_action(tools, "Set a top-level field of the output (not the answer list).", param_model=SetFieldParams)
    async def set_field(params: SetFieldParams) -> ActionResult:
        return _result(lambda: store.set_field(params.key, params.value), memory="set_field")

    @register_action(
        tools, "Delete items from the answer list (later indices shift down).", param_model=RemoveItemsParams
    )
    async def remove_items(params: RemoveItemsParams) -> ActionResult:
        return _result(lambda: store.remove_items(params.indices, params.reason), memory="remove_items")

    @register_action(
        tools,
        "Settle fields the source does not publish, with the reason; allowed once every item page was read.",
        param_model=MarkAbsentParams,
    )
    async def mark_absent(params: MarkAbsentParams) -> ActionResult:
        return _result(lambda: store.mark_absent(params.fields, params.reason), memory="mark_absent")

    @register_action(tools, "Read back the output (windowed; long values elided).", param_model=ReadOutputParams)
    async def read_output(params: ReadOutputParams) -> ActionResult:
        return _result(
            lambda: store.read_output(params.offset, params.limit, params.index, params.fields), memory="read_output"
        )

    @register_action(tools, "Find items of the output containing a text.", param_model=SearchOutputParams)
    async def search_output(params: SearchOutputParams) -> ActionResult:
        return _result(lambda: store.search_output(params.query), memory="search_output")

    @register_action(tools, "Append every item of a saved JSON array file to the answer list.", param_model=FileParams)
    async def add_items_from_file(params: FileParams) -> ActionResult:
        return _result(lambda: store.add_items_from_file(params.name), memory="add_items_from_file")

    @register_action(
        tools,
        "Merge a saved JSON array into the answer list: entries {index, fields}, or items matched by their URL.",
        param_model=FileParams,
    )
    async def update_items_from_file(params: FileParams) -> ActionResult:
        return _result(lambda: store.update_items_from_file(params.name), memory="update_items_from_file")


GateReport = Callable[[str, bool, list[str]], Awaitable[None]]
"""(summary, passed, deficiencies): the feed's summary is clipped, the list is the whole story."""


def install_done_gate(tools: Tools[Any], gate: Gate, report: GateReport) -> None:
    """Wrap the registered ``done``: bounce the first incomplete one, prepend the store to the accepted one."""

    def gate_done(original: ActionFunction) -> ActionFunction:
        async def gated_done(params: Any, **context: Any) -> ActionResult:
            result: ActionResult = await original(params=params, **context)
            if not result.is_done or not result.success:
                return result
            gate.store.adopt(first_json_value(result.extracted_content or ""))
            found = gate.check()
            if found:
                await report(gate_text(found), False, found)
                return ActionResult(
                    extracted_content=bounce_message(found),
                    include_extracted_content_only_once=True,  # the whole list and what to do, once, in full
                    long_term_memory=f"done was bounced. {gate_text(found)}"[:600],
                )
            await report(f"Completeness check passed — {gate.store.coverage()}", True, [])
            text = review_block(gate.store) + (result.extracted_content or "")
            return result.model_copy(update={"extracted_content": text})

        return gated_done

    if not wrap_action(tools, "done", gate_done):
        raise KeyError("done")
