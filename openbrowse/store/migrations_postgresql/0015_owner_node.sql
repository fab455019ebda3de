-- Spec §26.3, §26.5: the node that holds a session's run or parked browser, and a raw browser's node. A node acts
-- at start-up and in its sweeps only on its own rows; a survivor adopts a dead node's rows and types them.
ALTER TABLE sessions ADD COLUMN owner_node TEXT;
ALTER TABLE browsers ADD COLUMN owner_node TEXT;
CREATE INDEX sessions_owner_node ON sessions (owner_node) WHERE owner_node IS NOT NULL;
CREATE INDEX browsers_owner_node ON browsers (owner_node) WHERE owner_node IS NOT NULL;
