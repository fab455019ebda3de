"""Profiles: persisted browser state (cookies, localStorage, sessionStorage) and the three-way merge (spec §9).

Pure logic and files only; the CDP side (loading a jar into a browser, exporting it back) lives in
``openbrowse.sessions.profile_sync``.
"""
