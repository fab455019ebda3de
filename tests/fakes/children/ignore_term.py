"""Child for ManagedProcess tests: ignores SIGTERM and starts a grandchild in its own process group.

Prints ``<grandchild pid>`` on stdout, then sleeps until SIGKILL.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # inherits the group
print(grandchild.pid, flush=True)
while True:
    time.sleep(1)
