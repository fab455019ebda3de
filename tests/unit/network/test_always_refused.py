"""The always-refused set (spec §19.2): the service's own port and every slot's endpoints on any local address,
and cloud metadata, in both policies, whatever NETWORK_ALLOWED_HOSTS says."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import psutil
import pytest

from openbrowse.config import LAST_SLOT_INDEX, Settings
from openbrowse.network.local import (
    ReservedPorts,
    claim_service_port,
    is_local_address,
    release_service_port,
    slot_port_ranges,
)
from openbrowse.network.policy import NetworkRefused, NetworkRules
from openbrowse.slots.layout import SlotLayout

SERVICE_PORT = 8420
EVERY_HOLE = "*,0.0.0.0/0,::/0,localhost:8420,127.0.0.1:9222"
RESERVED = ReservedPorts(frozenset({SERVICE_PORT}))
POLICIES = [NetworkRules.build(policy, EVERY_HOLE, reserved=RESERVED) for policy in ("open", "public-only")]


def interface_ipv4() -> str | None:
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family == socket.AF_INET and not ipaddress.ip_address(entry.address).is_loopback:
                return str(entry.address)
    return None


SERVICE_SPELLINGS = [
    "http://127.0.0.1:8420/v3/sessions",
    "http://127.9.8.7:8420/",
    "http://0.0.0.0:8420/",
    "http://0:8420/",
    "http://[::1]:8420/",
    "http://[::]:8420/",
    "http://2130706433:8420/",
    "http://0x7f000001:8420/",
    "http://0x7f.1:8420/",
    "http://0177.0.0.1:8420/",
    "http://[::ffff:127.0.0.1]:8420/",
    "http://[::ffff:7f00:1]:8420/",
    "http://localhost:8420/",
    "https://127.0.0.1:8420/",
]
SLOT_ENDPOINTS = [9222, 9222 + LAST_SLOT_INDEX, 5910, 5910 + LAST_SLOT_INDEX, 6080, 6080 + LAST_SLOT_INDEX]


@pytest.mark.parametrize("rules", POLICIES, ids=lambda r: r.policy)
@pytest.mark.parametrize("url", SERVICE_SPELLINGS)
async def test_the_service_port_is_refused_on_every_local_spelling(rules: NetworkRules, url: str) -> None:
    with pytest.raises(NetworkRefused, match=r"8420.* is this service's own port \(never allowed\)\.$") as caught:
        await rules.check(url)
    assert caught.value.rule == "service_port" and caught.value.port == SERVICE_PORT


@pytest.mark.parametrize("rules", POLICIES, ids=lambda r: r.policy)
async def test_the_service_port_is_refused_on_this_hosts_interface_addresses(rules: NetworkRules) -> None:
    address = interface_ipv4()
    if address is None:
        pytest.skip("this host has no non-loopback IPv4 address")
    assert is_local_address(ipaddress.ip_address(address))
    with pytest.raises(NetworkRefused, match=rf"^Refused by the network policy: {address}:8420 is this service's"):
        await rules.check(f"http://{address}:8420/")
    await rules.check(f"http://{address}:8421/")  # the hole opens every other port there: the rule is the port


@pytest.mark.parametrize("rules", POLICIES, ids=lambda r: r.policy)
@pytest.mark.parametrize("port", SLOT_ENDPOINTS)
async def test_every_slots_endpoints_are_refused_on_local_addresses(rules: NetworkRules, port: int) -> None:
    for host in ("127.0.0.1", "[::1]", "0.0.0.0", "localhost"):
        with pytest.raises(NetworkRefused, match=r"is a browser slot's (DevTools|VNC|live-view) port") as caught:
            await rules.check(f"http://{host}:{port}/json/list")
        assert caught.value.rule == "slot_endpoint"


@pytest.mark.parametrize("rules", POLICIES, ids=lambda r: r.policy)
async def test_the_same_ports_elsewhere_and_neighbouring_ports_stay_open(rules: NetworkRules) -> None:
    for port in (9221, 9222 + LAST_SLOT_INDEX + 1, 5909, 6080 + LAST_SLOT_INDEX + 1, 8419):
        await rules.check(f"http://127.0.0.1:{port}/")
    for port in (SERVICE_PORT, 9222, 5910, 6080):
        await rules.check(f"http://93.184.216.34:{port}/")


@pytest.mark.parametrize("rules", POLICIES, ids=lambda r: r.policy)
async def test_metadata_is_refused_through_every_hole(rules: NetworkRules) -> None:
    for url in ("http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://100.100.100.200/"):
        with pytest.raises(NetworkRefused, match=r"\(never allowed\)") as caught:
            await rules.check(url)
        assert caught.value.rule in {"metadata", "link_local"}


def test_slot_ranges_match_the_slot_layout() -> None:
    cdp, vnc, novnc = slot_port_ranges()
    for index in (0, 1, LAST_SLOT_INDEX):
        layout = SlotLayout(index)
        assert layout.cdp_port in cdp and layout.vnc_port in vnc and layout.novnc_port in novnc
    last = SlotLayout(LAST_SLOT_INDEX)
    assert (cdp.last, vnc.last, novnc.last) == (last.cdp_port, last.vnc_port, last.novnc_port)
    first = SlotLayout(0)
    assert (cdp.first, vnc.first, novnc.first) == (first.cdp_port, first.vnc_port, first.novnc_port)


async def test_rules_from_settings_refuse_the_configured_and_the_bound_port(tmp_path: Path) -> None:
    settings = Settings(OPENBROWSE_HOME=tmp_path, PORT=8555, NETWORK_POLICY="open")
    rules = NetworkRules.from_settings(settings)
    assert rules.policy == "open"
    with pytest.raises(NetworkRefused, match="this service's own port"):
        await rules.check("http://127.0.0.1:8555/")
    await rules.check("http://127.0.0.1:8420/")
    ephemeral = Settings(OPENBROWSE_HOME=tmp_path, PORT=0, NETWORK_ALLOWED_HOSTS="localhost:3000")
    rules = NetworkRules.from_settings(ephemeral, service_ports=[40123])
    assert rules.policy == "public-only"
    with pytest.raises(NetworkRefused, match="this service's own port"):
        await rules.check("http://localhost:40123/")
    await rules.check("http://localhost:3000/")
    with pytest.raises(NetworkRefused, match=r"loopback address \(NETWORK_POLICY=public-only\)"):
        await rules.check("http://localhost:3001/")


async def test_ports_claimed_at_run_time_are_refused_until_released() -> None:
    rules = NetworkRules("open")
    await rules.check("http://127.0.0.1:44444/")
    claim_service_port(44444)
    try:
        with pytest.raises(NetworkRefused, match="this service's own port"):
            await rules.check("http://127.0.0.1:44444/")
    finally:
        release_service_port(44444)
    await rules.check("http://127.0.0.1:44444/")
