"""Child for the crash-recovery test: holds a running slot until it is killed (normally with SIGKILL).

Usage: ``slot_holder.py <data dir> <base index>``. Prints one JSON line describing the slot once it is up.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from openbrowse.config import Settings
from openbrowse.slots import SlotPool
from openbrowse.slots.ledger import tagged_processes


async def main() -> None:
    settings = Settings(OPENBROWSE_DATA_DIR=Path(sys.argv[1]), MAX_CONCURRENT_SESSIONS=1)
    async with SlotPool(settings, base_index=int(sys.argv[2])) as pool, pool.acquire("holder") as lease:
        slot = await lease.start_browser(vnc=True)
        pids = [p.pid for p in tagged_processes(slot.tag)]
        info = {"pids": pids, "cdp_ws_url": slot.cdp_ws_url, "tag": slot.tag, "display": slot.display}
        print(json.dumps(info), flush=True)
        await asyncio.Event().wait()


asyncio.run(main())
