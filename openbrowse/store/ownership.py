"""NodeOwnership: which node this process writes as, and the checks that keep a node to its own rows (spec §26.3,
§26.5).

On SQLite the process is the only one, every row is its own, and nothing here adds a clause. On PostgreSQL each
session and raw browser row names the node that holds it (``owner_node``):

* a node's start-up reconciliation and sweeps act only on its own rows (and on rows from before nodes existed,
  ``owner_node`` NULL), never on a run another node is holding;
* every update of a session or browser row carries a *fence* in the same statement: the writing node must still be
  registered under the epoch it holds. A survivor that declares a node dead marks it gone in the ``nodes`` table
  and adopts its rows in one transaction, so a node that was frozen or cut off and wakes up finds its writes
  refused (:class:`openbrowse.errors.NodeFenced`) instead of overwriting what the cluster decided.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from openbrowse.store.schema import nodes


class NodeOwnership:
    def __init__(self, node_id: str | None = None) -> None:
        self.node_id = node_id
        """None: a single process (SQLite), which owns everything."""
        self._epoch: int | None = None

    @property
    def clustered(self) -> bool:
        return self.node_id is not None

    def hold(self, epoch: int) -> None:
        """This process registered as the node with ``epoch`` (``NodePresence``)."""
        self._epoch = epoch

    def mine(self, owner_column: Any) -> Any:
        """A WHERE clause for "rows this node acts on", or None when every row is its own."""
        if self.node_id is None:
            return None
        return sa.or_(owner_column == self.node_id, owner_column.is_(None))

    def fence(self) -> Any:
        """A WHERE clause that holds only while this process is still the node it registered as, or None."""
        if self.node_id is None or self._epoch is None:
            return None
        return (
            sa.select(nodes.c.id)
            .where(nodes.c.id == self.node_id, nodes.c.epoch == self._epoch, nodes.c.left_at.is_(None))
            .exists()
        )

    def claim(self) -> dict[str, str]:
        """The column value a write that starts or queues a run here sets: this node holds it from now on."""
        return {"owner_node": self.node_id} if self.node_id is not None else {}


def where_all(*clauses: Any) -> list[Any]:
    """The clauses that are not None, for ``.where(*...)``."""
    return [clause for clause in clauses if clause is not None]
