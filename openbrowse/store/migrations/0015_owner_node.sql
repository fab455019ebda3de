-- Spec §26.3, §26.5: the node that holds a session's run or parked browser, and a raw browser's node. A node acts
-- at start-up and in its sweeps only on its own rows; a survivor adopts a dead node's rows and types them.
ALTER TABLE sessions ADD COLUMN owner_node TEXT;
ALTER TABLE browsers ADD COLUMN owner_node TEXT;
