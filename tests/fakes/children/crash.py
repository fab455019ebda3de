"""Child for ManagedProcess tests: writes a message to stderr and exits with code 3 before it is ready."""

from __future__ import annotations

import sys

print("boom: failing on purpose", file=sys.stderr, flush=True)
sys.exit(3)
