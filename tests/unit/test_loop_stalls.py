"""Charging event-loop stalls to code sites: module names from paths, the owner and innermost frames, the
bounded top list."""

from __future__ import annotations

import sys

from openbrowse.loop_stalls import OTHER, Frame, Site, StallBook, frames_of, module_of, site_of

STDLIB = f"/usr/lib/python{sys.version_info.major}.{sys.version_info.minor}"


def stack(*frames: tuple[str, str, int]) -> list[Frame]:
    """Innermost first."""
    return [Frame(module, function, line) for module, function, line in frames]


def test_module_names_come_from_package_paths() -> None:
    assert (
        module_of("/work/x/.venv/lib/python3.11/site-packages/browser_use/dom/service.py") == "browser_use.dom.service"
    )
    assert module_of("/work/wt/speed/openbrowse/sessions/run.py") == "openbrowse.sessions.run"
    assert module_of("/srv/openbrowse/openbrowse/agent/__init__.py") == "openbrowse.agent"
    assert module_of(f"{STDLIB}/json/encoder.py") == "json.encoder"


def test_the_owner_is_the_innermost_project_frame_and_where_the_innermost_of_all() -> None:
    held = stack(
        ("json.encoder", "iterencode", 258),
        ("pydantic.main", "model_dump_json", 400),
        ("openbrowse.agent.turns", "build_payload", 12),
        ("browser_use.agent.service", "step", 900),
        ("asyncio.events", "_run", 80),
    )
    site = site_of(held)
    assert site == Site("openbrowse.agent.turns.build_payload", "json.encoder.iterencode")
    assert site.label == "openbrowse.agent.turns.build_payload > json.encoder.iterencode"


def test_a_stall_in_project_code_names_one_frame() -> None:
    site = site_of(stack(("openbrowse.store.feed", "encode", 3), ("asyncio.events", "_run", 80)))
    assert site.label == "openbrowse.store.feed.encode"


def test_a_stack_without_project_frames_is_its_innermost_frame() -> None:
    assert site_of(stack(("zlib", "compress", 1), ("asyncio.events", "_run", 80))).label == "zlib.compress"
    assert site_of([]) == Site(OTHER, OTHER)


def test_a_stall_goes_to_its_most_sampled_site_with_its_lag() -> None:
    book = StallBook()
    dom = stack(("browser_use.dom.serializer", "serialize", 5))
    shot = stack(("base64", "b64decode", 7), ("browser_use.browser.session", "take_screenshot", 9))
    charged = book.charge([dom, shot, shot], lag=0.3)
    assert charged.label == "browser_use.browser.session.take_screenshot > base64.b64decode"
    book.charge([dom], lag=0.05)
    book.charge([dom], lag=0.02)
    (first, first_figures), (second, second_figures) = book.top(5)
    assert first == charged
    assert (first_figures.stalls, first_figures.samples, first_figures.total) == (1, 2, 0.3)
    assert first_figures.stack == ("base64.b64decode:7", "browser_use.browser.session.take_screenshot:9")
    assert second.label == "browser_use.dom.serializer.serialize"
    assert (second_figures.stalls, round(second_figures.total, 3), second_figures.worst) == (2, 0.07, 0.05)
    assert book.stalls == 3


def test_top_sums_the_rest_under_other() -> None:
    book = StallBook()
    for index, lag in enumerate((0.1, 0.2, 0.3, 0.4, 0.5)):
        book.charge([stack((f"openbrowse.m{index}", "f", 1))], lag=lag)
    top = book.top(2)
    assert [site.label for site, _ in top] == ["openbrowse.m4.f", "openbrowse.m3.f", OTHER]
    assert top[2][1].stalls == 3
    assert round(top[2][1].total, 3) == 0.6
    assert top[2][1].worst == 0.3


def test_sites_beyond_the_cap_are_counted_as_other() -> None:
    book = StallBook(max_sites=2)
    for index in range(4):
        book.charge([stack((f"openbrowse.m{index}", "f", 1))], lag=0.1)
    assert len(book.sites) == 3
    assert book.sites[Site(OTHER, OTHER)].stalls == 2


def test_a_stall_without_samples_is_counted_as_other() -> None:
    book = StallBook()
    assert book.charge([], lag=0.04) == Site(OTHER, OTHER)


def test_frames_of_reads_a_live_stack_innermost_first() -> None:
    def inner() -> list[Frame]:
        return frames_of(sys._getframe())

    found = inner()
    assert found[0].function == "inner"
    assert found[0].module == "tests.unit.test_loop_stalls"
    assert found[1].function == "test_frames_of_reads_a_live_stack_innermost_first"
