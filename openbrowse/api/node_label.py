"""Every ``/metrics`` series labelled with the node that served it (spec §26.7), so a scraper of several nodes
can tell them apart and sum them."""

from __future__ import annotations


def _label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def label_with_node(exposition: bytes, node_id: str) -> bytes:
    """Add ``node="<id>"`` as the first label of every sample line of a Prometheus text exposition; comments
    (``# HELP``, ``# TYPE``) and blank lines pass unchanged."""
    label = f'node="{_label_value(node_id)}"'
    lines = exposition.decode("utf-8").split("\n")
    for index, line in enumerate(lines):
        if not line or line.startswith("#"):
            continue
        brace, space = line.find("{"), line.find(" ")
        if brace != -1 and (space == -1 or brace < space):
            rest = line[brace + 1 :]
            lines[index] = f"{line[: brace + 1]}{label}{'' if rest.startswith('}') else ','}{rest}"
        elif space != -1:
            lines[index] = f"{line[:space]}{{{label}}}{line[space:]}"
    return "\n".join(lines).encode("utf-8")
