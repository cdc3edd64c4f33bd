"""REAL's own hosts on this machine: an HTTPS proxy that serves agisdk's task URLs from the clones.

agisdk's harness opens each v2 task at its hosted URL (``https://real-<site>-....vercel.app/``, from
agisdk's task file), resets it with ``/config?run_id=..&task_id=v2.<name>&latency=0`` and reads
``/finish``. Chromium honours ``https_proxy``; this proxy answers ``CONNECT`` for those hosts only,
ends TLS with a certificate signed by a local CA (made once in ``--ca-dir``; the browser must trust it:
docs/sites.md shows the one ``certutil`` line) and passes the requests to the clone server, which
serves a REAL host's paths as its site's (``halo_sites.app``). agisdk itself runs unmodified.

    python -m halo_sites.real_proxy --sites-url http://127.0.0.1:8300 --port 8399 --ca-dir var/real-ca
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import logging
import ssl
import sys
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from halo_sites.tasks import real_site_hosts

logger = logging.getLogger("halo.sites.real_proxy")
CA_NAME = "HALO offline REAL clones (local CA)"
_MAX_HEAD = 16 * 1024


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def ensure_ca(ca_dir: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The local CA in ``ca_dir`` (``ca.pem``, ``ca.key``), made on first use and kept: the browser
    trusts it once."""
    cert_path, key_path = ca_dir / "ca.pem", ca_dir / "ca.key"
    if cert_path.is_file() and key_path.is_file():
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return x509.load_pem_x509_certificate(cert_path.read_bytes()), key
    ca_dir.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(CA_NAME))
        .issuer_name(_name(CA_NAME))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # keyCertSign, cRLSign
        .sign(key, hashes.SHA256())
    )
    key_path.touch(mode=0o600)
    key_path.write_bytes(_pem_key(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def server_context(ca_dir: Path, hosts: list[str]) -> ssl.SSLContext:
    """TLS for ``hosts``: a leaf certificate for all of them, signed by the local CA (HTTP/1.1 only)."""
    ca_cert, ca_key = ensure_ca(ca_dir)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("HALO offline REAL clones"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=90))  # browsers refuse leaves valid for long
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = ca_dir / "leaf.pem"
    leaf.touch(mode=0o600)
    leaf.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + _pem_key(key))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(leaf)
    context.set_alpn_protocols(["http/1.1"])
    return context


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class RealProxy:
    """``CONNECT <REAL host>:443`` ends here in TLS and continues, as plain HTTP, to the clone server."""

    def __init__(self, sites_url: str, ca_dir: Path) -> None:
        target = urlsplit(sites_url)
        self.sites = (target.hostname or "127.0.0.1", target.port or 80)
        self.hosts = real_site_hosts()
        self.tls = server_context(ca_dir, sorted(self.hosts))

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        method, _, rest = head.decode("latin-1").partition(" ")
        authority = rest.split(" ", 1)[0]
        host, _, port = authority.rpartition(":")
        if method != "CONNECT" or port != "443" or host not in self.hosts:
            why = f"this proxy serves only CONNECT to REAL's hosts on port 443, not {method} {authority}"
            writer.write(f"HTTP/1.1 403 Forbidden\r\nContent-Length: {len(why)}\r\n\r\n{why}".encode())
            await writer.drain()
            writer.close()
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        try:
            await writer.start_tls(self.tls)
            up_reader, up_writer = await asyncio.open_connection(*self.sites)
        except (ssl.SSLError, ConnectionError, OSError) as exc:
            logger.warning("tunnel to %s not opened: %s", host, exc)
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def serve(sites_url: str, host: str, port: int, ca_dir: Path, started: asyncio.Event | None = None) -> None:
    proxy = RealProxy(sites_url, ca_dir)
    server = await asyncio.start_server(proxy.handle, host, port, limit=_MAX_HEAD)
    logger.info("REAL hosts (%d) proxied to %s on %s:%d", len(proxy.hosts), sites_url, host, port)
    if started is not None:
        started.set()
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m halo_sites.real_proxy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites-url", default="http://127.0.0.1:8300", help="the clone server")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8399, help="port to listen on")
    parser.add_argument("--ca-dir", type=Path, default=Path("var/real-ca"), help="where the local CA is kept")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    sys.stdout.write(f"export https_proxy=http://{args.host}:{args.port}\n")
    sys.stdout.write(f"trust {args.ca_dir / 'ca.pem'} (docs/sites.md, 'agisdk's harness on the clones')\n")
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.sites_url, args.host, args.port, args.ca_dir))


if __name__ == "__main__":
    main()
