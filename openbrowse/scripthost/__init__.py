"""The script host: the process ``run_code_file`` scripts run in, inside the slot's sandbox (spec §11.3, §24.1).

Started by the server as ``python -I -m openbrowse.scripthost --channel <socket> --cdp-port <port>``. It imports
nothing of the server: inside the sandbox only this directory of the package exists. The persistent namespace,
top-level ``await`` and captured ``print`` live here; ``browser.*`` talks CDP straight to the slot's Chromium, and
every other helper is a call over the one channel to the server, which validates it.
"""
