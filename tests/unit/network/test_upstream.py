"""Reading upstream proxies (spec §28.1): ``customProxy`` fields, ``PROXY_POOL`` URLs, the choice a request makes, and
what may be shown of a proxy (never its credentials)."""

from __future__ import annotations

import pytest

from openbrowse.config import Settings
from openbrowse.errors import ConfigError, InvalidRequest, ProxyUnavailable
from openbrowse.network.upstream import UpstreamProxy, parse_pool, parse_proxy_url, proxy_from_fields
from openbrowse.sessions.proxies import (
    ProxyChooser,
    custom_proxy,
    proxy_cost_usd,
    proxy_used_mb,
    public_proxy,
    wipe_credentials,
)


def settings(**values: str) -> Settings:
    return Settings.model_validate(values)


def test_a_pool_url_is_read_with_its_credentials_decoded() -> None:
    proxy = parse_proxy_url("http://us%40er:p%3Ass@Proxy.Example:8000")
    assert proxy == UpstreamProxy("http", "proxy.example", 8000, "us@er", "p:ss")
    socks = parse_proxy_url("socks5://[::1]:1080")
    assert socks.label == "[::1]:1080" and socks.username is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://p:21", "A proxy URL must start with http:// or socks5:// (got ftp://)."),
        ("http://p", "A proxy URL must name its port."),
        ("http://p:99999", "A proxy URL's port must be a number from 1 to 65535."),
        ("http://p:80/path", "A proxy URL names a host and a port only, no path or query."),
    ],
)
def test_bad_pool_urls_are_refused_in_one_sentence(url: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_proxy_url(url)
    assert refused.value.message == message


def test_the_pool_names_a_bad_entry_by_number_and_never_its_credentials() -> None:
    assert set(parse_pool("US=http://a:b@p1:8000, de=socks5://p2:1080,")) == {"us", "de"}
    with pytest.raises(ValueError, match="PROXY_POOL entry 2") as refused:
        parse_pool("us=http://p1:8000,de=http://user:s3cret@p2")
    assert "s3cret" not in str(refused.value)
    with pytest.raises(ValueError, match="must look like 'us=http://host:port'"):
        parse_pool("http://p1:8000")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"host": "", "port": 80}, "customProxy.host must be a host name or an IP address."),
        ({"host": "a b", "port": 80}, "customProxy.host 'a b' is not a valid host name or IP address."),
        ({"host": "p", "port": True}, "customProxy.port must be a whole number from 1 to 65535."),
        ({"host": "p", "port": "80"}, "customProxy.port must be a whole number from 1 to 65535."),
        ({"host": "p", "port": 80, "password": "x"}, "customProxy.password needs a username."),
        ({"host": "p", "port": 80, "username": "a:b"}, "customProxy.username must not contain ':' for an http proxy"),
        ({"host": "p", "port": 80, "username": "a\r\nb"}, "customProxy.username must not contain control characters."),
        ({"host": "p", "port": 80, "username": "u" * 256}, "customProxy.username must be at most 255 bytes."),
        ({"host": "p", "port": 80, "ignoreCertErrors": "yes"}, "customProxy.ignoreCertErrors must be true or false."),
        ({"host": "p", "port": 80, "region": "eu"}, "customProxy has an unknown field: region."),
    ],
)
def test_bad_custom_proxies_are_refused_naming_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        custom_proxy(fields)
    assert refused.value.message.startswith(message)


def test_credentials_never_show_in_repr_label_or_public_form() -> None:
    proxy = proxy_from_fields("p.example", 3128, username="alice", password="hunter2-secret", scheme="socks5")
    for shown in (repr(proxy), proxy.label, str(proxy.public())):
        assert "hunter2-secret" not in shown and "alice" not in shown
    assert proxy.public() == {"host": "p.example", "port": 3128, "scheme": "socks5", "hasUsername": True}
    stored = proxy.stored()
    assert UpstreamProxy.from_stored(stored) == proxy
    wiped = wipe_credentials(stored)
    assert wiped is not None and "password" not in wiped and "username" not in wiped
    assert UpstreamProxy.from_stored(wiped) is None  # a wiped proxy is never used as a credential-less one
    assert public_proxy(stored) == (proxy.public(), None)


def test_the_choice_a_request_makes() -> None:
    chooser = ProxyChooser(settings(PROXY_POOL="us=http://p1:8000,de=socks5://p2:1080", PROXY_DEFAULT_COUNTRY="DE"))
    assert chooser.choose(None, None, custom_sent=False, country_sent=False) == {"country": "de"}
    assert chooser.choose(None, None, custom_sent=False, country_sent=True) is None  # explicit null: direct
    assert chooser.choose(None, "US", custom_sent=False, country_sent=True) == {"country": "us"}
    custom = chooser.choose({"host": "c", "port": 1}, None, custom_sent=True, country_sent=False)
    assert custom is not None and custom["host"] == "c" and custom["scheme"] == "http"
    with pytest.raises(ProxyUnavailable) as unknown:
        chooser.choose(None, "fr", custom_sent=False, country_sent=True)
    assert unknown.value.message == "No proxy for country 'fr' in this server's PROXY_POOL (available: de, us)."
    with pytest.raises(InvalidRequest, match="not both"):
        chooser.choose({"host": "c", "port": 1}, "us", custom_sent=True, country_sent=True)
    direct = ProxyChooser(settings())
    assert direct.choose(None, None, custom_sent=False, country_sent=False) is None


def test_a_pool_that_does_not_read_stops_the_start() -> None:
    with pytest.raises(ConfigError, match="PROXY_DEFAULT_COUNTRY=fr is not a country in PROXY_POOL"):
        ProxyChooser(settings(PROXY_POOL="us=http://p1:8000", PROXY_DEFAULT_COUNTRY="fr"))
    with pytest.raises(ConfigError, match="PROXY_POOL entry 1"):
        ProxyChooser(settings(PROXY_POOL="us=gopher://p1:70"))


def test_usage_and_cost() -> None:
    assert proxy_used_mb(0) == "0" and proxy_used_mb(1_500_000) == "1.5" and proxy_used_mb(1234) == "0.001"
    assert proxy_cost_usd(settings(PROXY_COST_PER_GB="2.5"), 2 * 10**9) == 5
    assert proxy_cost_usd(settings(), 10**12) == 0
