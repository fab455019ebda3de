"""Profiles: persisted browser state (cookies, localStorage, sessionStorage) and the three-way merge (spec §9).

Pure logic and files, plus the CDP side (loading a jar into a browser, exporting it back):
:mod:`openbrowse.profiles.sync` (one run's profile) over :mod:`openbrowse.profiles.cdp` (our DevTools link).
Never imports ``sessions``: the run hands its browser endpoint and profile store in.
"""
