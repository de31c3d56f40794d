"""Fetching a URL someone else gave: only addresses on the public internet unless the settings
allow private networks, checked by name before every request and redirect and again when the
connection is made, so neither a redirect nor a name that resolves elsewhere the second time
reaches the fleet's own network. A local web server stands in for both sides: the tests treat
127.0.0.1 as public and every other address as what it is."""

from __future__ import annotations

import ipaddress
import itertools
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bucketdigest.shared import fetch as fetching
from bucketdigest.shared.errors import PermanentDigestError
from bucketdigest.shared.fetch import FetchError, FetchSettings, Robots, address_kind, fetch

SECRET = b"instance credentials"


@dataclass
class Site:
    url: str
    port: int
    paths: list[str] = field(default_factory=list)
    """Every path the server was asked for, robots.txt included."""


@pytest.fixture
def site() -> Iterator[Site]:
    """A server that answers /secret with the secret, /to?url with a redirect there and
    /trickle with 200 chunks of a byte."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            if self.path.startswith("/to?"):
                self.send_response(302)
                self.send_header("Location", self.path.removeprefix("/to?"))
                self.end_headers()
                return
            if self.path == "/trickle":  # a byte a chunk: each read gets one
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"1\r\n.\r\n" * 200 + b"0\r\n\r\n")
                return
            self.send_response(200 if self.path == "/secret" else 404)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(SECRET if self.path == "/secret" else b"")

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    yield Site(f"http://127.0.0.1:{port}", port, asked)
    server.shutdown()


@pytest.fixture
def loopback_is_public(monkeypatch: pytest.MonkeyPatch) -> None:
    """127.0.0.1 (the test server) counts as a public address; 127.0.0.2 and the rest do not."""
    real = fetching.address_kind
    monkeypatch.setattr(
        fetching, "address_kind", lambda text: None if text == "127.0.0.1" else real(text)
    )


def test_a_private_address_is_not_fetched_unless_the_settings_allow_it(site: Site) -> None:
    for url in (f"{site.url}/secret", f"http://localhost:{site.port}/secret"):
        with pytest.raises(PermanentDigestError, match=r"loopback.*fetch_private_networks"):
            fetch(url, FetchSettings())
    assert site.paths == []  # not even its robots.txt was asked for
    assert fetch(f"{site.url}/secret", FetchSettings(private_networks=True)).body == SECRET


@pytest.mark.usefixtures("loopback_is_public")
def test_a_redirect_to_a_private_address_is_not_followed(site: Site) -> None:
    assert fetch(f"{site.url}/secret", FetchSettings()).body == SECRET  # the stand-in works
    inside = f"http://127.0.0.2:{site.port}/secret"
    with pytest.raises(PermanentDigestError, match=r"127\.0\.0\.2 is this machine"):
        fetch(f"{site.url}/to?{inside}", FetchSettings(respect_robots=False))
    assert site.paths[-1] == f"/to?{inside}"  # the redirect was asked for, not its target


@pytest.mark.usefixtures("loopback_is_public")
def test_a_redirect_to_another_scheme_is_not_followed(site: Site) -> None:
    with pytest.raises(PermanentDigestError, match="not http"):
        fetch(f"{site.url}/to?file:///etc/passwd", FetchSettings(respect_robots=False))
    with pytest.raises(PermanentDigestError, match="not http"):
        fetch(f"{site.url}/to?ftp://127.0.0.1/", FetchSettings(respect_robots=False))


@pytest.mark.usefixtures("loopback_is_public")
def test_a_name_that_resolves_elsewhere_when_connecting_gets_nowhere(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: the name's first answer is public, the one the connection would use is
    not; the connection is made to an address checked when it is made."""
    answers = iter(["127.0.0.1", "127.0.0.2", "127.0.0.2"])
    real = socket.getaddrinfo

    def rebinding(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebind.example":
            return real(next(answers), port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with pytest.raises(PermanentDigestError, match=r"rebind\.example \(127\.0\.0\.2\)"):
        fetch(f"http://rebind.example:{site.port}/secret", FetchSettings(respect_robots=False))
    assert site.paths == []


def test_an_answer_trickled_out_is_given_up_at_the_deadline(site: Site) -> None:
    """Each byte comes within the read timeout; the whole answer is what has a limit. The
    clock moves a tenth of a second each time it is read."""
    ticks = itertools.count()
    settings = FetchSettings(private_networks=True, respect_robots=False, max_seconds=0.5)
    with pytest.raises(FetchError, match=r"took over 0\.5 s"):
        fetch(f"{site.url}/trickle", settings, clock=lambda: next(ticks) / 10)
    assert next(ticks) < 20  # given up after a few bytes, not the 200
    whole = fetch(f"{site.url}/trickle", replace(settings, max_seconds=300.0))
    assert whole.body == b"." * 200


def test_robots_txt_of_a_private_site_is_not_read(site: Site) -> None:
    assert Robots(FetchSettings()).allows(f"{site.url}/secret")  # no rules read: none known
    assert site.paths == []


PRIVATE_V4 = st.one_of(
    st.ip_addresses(v=4, network="10.0.0.0/8"),
    st.ip_addresses(v=4, network="127.0.0.0/8"),
    st.ip_addresses(v=4, network="169.254.0.0/16"),
    st.ip_addresses(v=4, network="172.16.0.0/12"),
    st.ip_addresses(v=4, network="192.168.0.0/16"),
    st.ip_addresses(v=4, network="100.64.0.0/10"),
    st.ip_addresses(v=4, network="0.0.0.0/8"),
)


@given(PRIVATE_V4)
def test_a_private_ipv4_address_is_refused_in_each_ipv6_dress(address: Any) -> None:
    """Mapped (::ffff:a.b.c.d), 6to4 (2002:…), NAT64 (64:ff9b::…): the same address."""
    dressed = [
        ipaddress.IPv6Address(f"::ffff:{address}"),
        ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80)),
        ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(address)),
    ]
    assert address_kind(str(address)) is not None
    assert all(address_kind(str(form)) is not None for form in dressed)


def test_public_addresses_pass_and_the_others_are_named() -> None:
    assert address_kind("93.184.215.14") is None
    assert address_kind("2606:4700:4700::1111") is None
    assert address_kind("169.254.169.254") == "link-local (where cloud metadata services answer)"
    assert address_kind("fd00:ec2::254") == "a private or reserved network"
    assert address_kind("::1") == "this machine (loopback)"
    assert address_kind("fe80::1%eth0") is not None
