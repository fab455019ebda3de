"""The network policy's normaliser and rules: an SSRF corpus, spelling properties, holes."""

from __future__ import annotations

import ipaddress
import itertools
import re

import pytest

from openbrowse.network.policy import (
    NetworkRefused,
    NetworkRules,
    embedded_ipv4,
    normalise_host,
    parse_ipv4,
    parse_target,
)

PUBLIC_ONLY = NetworkRules("public-only")
OPEN = NetworkRules("open")

# Each of these must be refused under public-only (resolving names through the system resolver), for the address
# its spelling stands for: a refusal for any other reason (a name that does not resolve) would let an unnormalised
# spelling pass. The reasons are patterns (dots match themselves closely enough; localhost may resolve either way).
SSRF_CORPUS = [
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://127.0.0.1:8420/v3/sessions", "127.0.0.1 is a loopback address"),
    ("http://localhost/", "localhost -> (127.0.0.1|::1) is a loopback address"),
    ("http://LOCALHOST./", "localhost -> (127.0.0.1|::1) is a loopback address"),
    ("http://2130706433/", "127.0.0.1 is a loopback address"),
    ("http://0177.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://0x7f.1/", "127.0.0.1 is a loopback address"),
    ("http://0x7f000001/", "127.0.0.1 is a loopback address"),
    ("http://0X7F.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://127.1/", "127.0.0.1 is a loopback address"),
    ("http://127.0.1/", "127.0.0.1 is a loopback address"),
    ("http://017700000001/", "127.0.0.1 is a loopback address"),
    ("http://127.0.0.1./", "127.0.0.1 is a loopback address"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1 is a loopback address"),
    ("http://[::ffff:7f00:1]/", "::ffff:7f00:1 is a loopback address"),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]/", "::ffff:7f00:1 is a loopback address"),
    ("http://[::127.0.0.1]/", "::7f00:1 is a loopback address"),
    ("http://[64:ff9b::127.0.0.1]/", "64:ff9b::7f00:1 is a loopback address"),
    ("http://[2002:7f00:1::]/", "2002:7f00:1:: is a loopback address"),
    ("http://evil.example@127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://user:pass@127.0.0.1:80/", "127.0.0.1 is a loopback address"),
    ("http://0.0.0.0/", "0.0.0.0 is an unspecified address"),
    ("http://0/", "0.0.0.0 is an unspecified address"),
    ("http://[::]/", ":: is an unspecified address"),
    ("http://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://012.0.0.1/", "10.0.0.1 is a private address"),
    ("http://172.16.5.4/", "172.16.5.4 is a private address"),
    ("http://192.168.1.1/", "192.168.1.1 is a private address"),
    ("http://3232235777/", "192.168.1.1 is a private address"),
    ("http://100.64.0.1/", "100.64.0.1 is a CGNAT address"),
    ("http://[fc00::1]/", "fc00::1 is a unique-local address"),
    ("http://[fd12:3456::1]/", "fd12:3456::1 is a unique-local address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://0xa9fea9fe/", "169.254.169.254 is a link-local address"),
    ("http://[fd00:ec2::254]/", "fd00:ec2::254 is a cloud metadata address"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is a cloud metadata host"),
    ("http://metadata.google.internal./", "metadata.google.internal is a cloud metadata host"),
    ("https://127.0.0.1:443/", "127.0.0.1 is a loopback address"),
    ("http://１２７.０.０.１/", "127.0.0.1 is a loopback address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://255.255.255.255/", "255.255.255.255 is a private address"),
]

METADATA = [
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.170.2/v2/credentials",
    "http://2852039166/",
    "http://0251.0376.0251.0376/",
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://169.254.43518/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[fd00:ec2::254]/",
    "http://[FD00:EC2:0::254]/",
    "http://metadata.google.internal/",
    "http://METADATA.GOOGLE.INTERNAL./",
    "http://x@metadata.google.internal/",
    "http://100.100.100.200/",
    "http://[fe80::a9fe:a9fe]/",
]

MALFORMED = [
    "file:///etc/passwd",
    "gopher://127.0.0.1/",
    "ftp://example.com/",
    "http:///nohost",
    "http://256.0.0.1/",
    "http://1.2.3.4.5/",
    "http://0x100000000/",
    "http://127.0.0.1\\@example.com/",
    "http://exa mple.com/",
    "http://%31%32%37.0.0.1/",
    "http://[::1/",
    "/relative/path",
]


@pytest.mark.parametrize(("url", "reason"), SSRF_CORPUS)
async def test_the_ssrf_corpus_is_refused_under_public_only(url: str, reason: str) -> None:
    with pytest.raises(NetworkRefused) as refused:
        await PUBLIC_ONLY.check(url)
    assert re.fullmatch(
        rf"Refused by the network policy: {reason} \((NETWORK_POLICY=public-only|never allowed)\)\.", str(refused.value)
    ), str(refused.value)


@pytest.mark.parametrize("url", METADATA)
async def test_metadata_and_link_local_are_refused_even_when_open(url: str) -> None:
    with pytest.raises(NetworkRefused, match=r"\(never allowed\)"):
        await OPEN.check(url)


@pytest.mark.parametrize("url", MALFORMED)
async def test_malformed_and_foreign_urls_are_refused_in_both_modes(url: str) -> None:
    for rules in (OPEN, PUBLIC_ONLY):
        with pytest.raises(NetworkRefused):
            await rules.check(url)


async def test_open_allows_loopback_and_private_and_public_only_allows_public() -> None:
    target, addresses = await OPEN.check("http://evil@0x7f.1:8080/a?b=1")
    assert (target.host, target.port, target.path, addresses) == (
        "127.0.0.1",
        8080,
        "/a?b=1",
        [ipaddress.ip_address("127.0.0.1")],
    )
    await OPEN.check("http://10.1.2.3/")
    target, _ = await PUBLIC_ONLY.check("https://93.184.216.34/x")
    assert target.authority == "93.184.216.34"
    await PUBLIC_ONLY.check("http://[2606:4700::1111]:8080/")


async def test_allowed_hosts_punch_holes_in_public_only_but_never_in_metadata() -> None:
    rules = NetworkRules.build("public-only", " localhost , *.corp.test,10.0.0.0/8, 127.0.0.2 ")
    assert rules.allowed_hosts == ("localhost", "*.corp.test", "10.0.0.0/8", "127.0.0.2")
    await rules.check("http://localhost:9/")
    await rules.check("http://10.9.8.7/")
    await rules.check("http://0x7f.0.0.2/")
    assert rules.refusal(parse_target("http://db.corp.test/"), [ipaddress.ip_address("192.168.0.4")]) is None
    with pytest.raises(NetworkRefused, match="loopback"):
        await rules.check("http://127.0.0.1/")
    wide = NetworkRules.build("public-only", "*,169.254.0.0/16")
    with pytest.raises(NetworkRefused, match=r"\(never allowed\)"):
        await wide.check("http://169.254.169.254/")
    with pytest.raises(NetworkRefused, match="cloud metadata host"):
        await wide.check("http://metadata.google.internal/")


def test_every_resolved_address_is_checked() -> None:
    target = parse_target("http://rebind.example/")
    public, private = ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("10.0.0.5")
    assert PUBLIC_ONLY.refusal(target, [public]) is None
    refused = PUBLIC_ONLY.refusal(target, [public, private])
    assert refused is not None and (refused.rule, refused.host, refused.port) == ("public_only", "rebind.example", 80)
    assert refused.reason == "rebind.example -> 10.0.0.5 is a private address (NETWORK_POLICY=public-only)."


def spellings(address: ipaddress.IPv4Address) -> list[str]:
    """Every WHATWG spelling family of one IPv4 address: 1 to 4 parts, each in decimal, octal or hex."""
    octets = list(address.packed)
    forms: list[str] = []
    for parts in (1, 2, 3, 4):
        head, tail_bytes = octets[: parts - 1], octets[parts - 1 :]
        tail = int.from_bytes(bytes(tail_bytes), "big")
        values = [*head, tail]
        for styles in itertools.product("dox", repeat=len(values)):
            rendered = [
                str(v) if s == "d" else (f"0{v:o}" if s == "o" else f"0x{v:x}")
                for v, s in zip(values, styles, strict=True)
            ]
            forms.append(".".join(rendered))
            forms.append(".".join(rendered) + ".")
    return forms


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.20.30.40", "169.254.169.254", "192.168.0.255", "0.0.0.0", "255.255.255.255", "8.8.4.4"]
)
def test_every_ipv4_spelling_normalises_to_the_same_address(address: str) -> None:
    expected = ipaddress.IPv4Address(address)
    for form in spellings(expected):
        assert parse_ipv4(form) == expected, form
        assert normalise_host(form) == (address, expected), form
        assert normalise_host(form.upper()) == (address, expected), form


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.1", "169.254.169.254", "100.64.3.2"])
def test_ipv6_wrappings_unwrap_to_the_inner_ipv4(address: str) -> None:
    inner = ipaddress.IPv4Address(address)
    wrapped = [
        f"::ffff:{address}",
        f"::ffff:{int(inner) >> 16:x}:{int(inner) & 0xFFFF:x}",
        f"64:ff9b::{address}",
        f"2002:{int(inner) >> 16:x}:{int(inner) & 0xFFFF:x}::1",
    ]
    for form in wrapped:
        host, ip = normalise_host(f"[{form}]")
        assert ip is not None and embedded_ipv4(ip) == inner, form
        assert ipaddress.ip_address(host) == ip


def test_names_are_lowercased_and_trailing_dots_dropped() -> None:
    assert normalise_host("Example.COM.") == ("example.com", None)
    assert normalise_host("bücher.de") == ("xn--bcher-kva.de", None)
    assert parse_ipv4("example.com") is None
    assert parse_ipv4("1.2.3.example") is None
    assert parse_target("HTTPS://User@Example.com:8443").authority == "example.com:8443"
