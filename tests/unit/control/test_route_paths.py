"""The control API's route table known at start-up is the one its serving modules register, and installing the
HTTP routes loads neither those modules nor Playwright (they load on the first control call)."""

from __future__ import annotations

import subprocess
import sys

from openbrowse.control.catalog import all_routes, route_for
from openbrowse.control.paths import ROUTE_PATHS


def test_the_start_up_table_is_what_the_serving_modules_register() -> None:
    assert len(set(ROUTE_PATHS)) == len(ROUTE_PATHS)
    assert sorted(ROUTE_PATHS) == sorted((route.method, route.path) for route in all_routes())


def test_each_pair_finds_its_handler() -> None:
    for method, path in ROUTE_PATHS:
        route = route_for(method, path)
        assert (route.method, route.path) == (method, path)


def test_the_app_and_its_control_routes_load_without_playwright() -> None:
    probe = (
        "import sys\n"
        "from fastapi import FastAPI\n"
        "import openbrowse.app\n"
        "from openbrowse.api.routes.control import install_control_routes\n"
        "install_control_routes(FastAPI())\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'playwright'"
        " or name.startswith(('openbrowse.control.engine', 'openbrowse.mcpbrowser.backend'))))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
