"""The script host: the process ``run_code_file`` scripts run in, inside the slot's sandbox (spec §11.3, §24.1).

Started by the server as ``python -I -m openbrowse.scripthost --channel-fd N --cdp-fd M`` (two inherited sockets,
under its own uid and network namespace, with a seccomp filter loaded before any script runs). It imports
nothing of the server: inside the sandbox only this directory of the package exists. The persistent namespace,
top-level ``await`` and captured ``print`` live here; ``browser.*`` talks CDP through the server's page filter
(its page and that page's frames, never the browser), and every other helper is a call over the one channel to
the server, which validates it.
"""
