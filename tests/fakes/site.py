"""Local fixture sites the browser visits: a small shop, a form, and a page embedding a cross-origin panel.

``FixtureSites`` serves the main site on one port and the embedded panel on a second port, so the iframe is
genuinely cross-origin. The shop lives in :mod:`~tests.fakes.site_shop`, the panel site in
:mod:`~tests.fakes.site_panel` and the pages built in code in :mod:`~tests.fakes.site_pages`.
"""

from __future__ import annotations

from tests.fakes.site_pages import (
    BIG_PAGE_ROWS,
    LAZY_BATCH,
    LAZY_ITEMS,
    SLOW_LIST_DELAY_MS,
    SLOW_LIST_FEATURED,
    SLOW_LIST_ITEMS,
    big_page,
    catalog_item,
    lazy_list,
    page,
    slow_list_page,
)
from tests.fakes.site_panel import CAREER_CITIES, CAREER_COMPANY, CAREER_TITLES, PANEL_JOBS, career_records, panel_app
from tests.fakes.site_shop import PRODUCTS, HitLog, ShopState, shop_app
from tests.support.asgi_thread import ThreadedServer

__all__ = [
    "BIG_PAGE_ROWS",
    "CAREER_CITIES",
    "CAREER_COMPANY",
    "CAREER_TITLES",
    "LAZY_BATCH",
    "LAZY_ITEMS",
    "PANEL_JOBS",
    "PRODUCTS",
    "SLOW_LIST_DELAY_MS",
    "SLOW_LIST_FEATURED",
    "SLOW_LIST_ITEMS",
    "FixtureSites",
    "HitLog",
    "ShopState",
    "big_page",
    "career_records",
    "catalog_item",
    "lazy_list",
    "page",
    "panel_app",
    "shop_app",
    "slow_list_page",
]


class FixtureSites:
    """The shop on one port, the cross-origin panel on another."""

    def __init__(self) -> None:
        self.state = ShopState()
        self._panel = ThreadedServer(panel_app())
        self._shop = ThreadedServer(shop_app(self.state, self._panel.url))

    @property
    def url(self) -> str:
        return self._shop.url

    @property
    def port(self) -> int:
        return self._shop.port

    @property
    def panel_port(self) -> int:
        return self._panel.port

    @property
    def panel_url(self) -> str:
        return self._panel.url

    def __enter__(self) -> FixtureSites:
        self._panel.start()
        self._shop.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._shop.close()
        self._panel.close()
