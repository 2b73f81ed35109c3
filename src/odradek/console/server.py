"""`odradek console --bootstrap-server H:P`: the web console, a process of its own that speaks the Kafka
protocol to any Kafka-compatible cluster (Odradek or not) and serves pages about it over HTTP.

    odradek console --bootstrap-server 127.0.0.1:9092 [--command-config FILE] [--port 8080] [--host 127.0.0.1]
                    [--token-file FILE] [--allowed-host NAME ...] [--read-only] [--connect-url URL]
                    [--schema-registry-url URL [--schema-registry-config FILE]]

Only its operator may use it. Once it serves it prints `Console at http://127.0.0.1:8080/?token=<token>`:
that URL logs a browser in (or paste the token into the login page). The token is random for each run,
unless --token-file FILE or $ODRADEK_CONSOLE_TOKEN fixes it (then it is not printed). The console answers
only requests for the host names localhost, 127.0.0.1, [::1], the --host address and those given with
--allowed-host (DNS rebinding); --read-only refuses every change. It listens on 127.0.0.1 unless told
otherwise, and warns when the address is not a loopback one: the token and the session cookie then cross
the network in clear, so put a TLS proxy in front.

It checks that the cluster answers (one line on stderr and exit code 1 when it does not), starts sampling
consumer-group lag, and serves until SIGINT or SIGTERM, logging like the broker does. This process binds
the port and supervises the serving process, which holds every librdkafka client, and starts it again if
it dies (see supervisor.py); the serving process itself is serving.py.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import secrets
import socket
import sys

from odradek.admin_client.command import ArgParser, parse_int, run_tool
from odradek.admin_client.connect import add_bootstrap_flags, bootstrap_of, read_properties_file
from odradek.admin_client.errors import CliError, UsageError
from odradek.admin_client.schema_registry import URL_KEYS, RegistrySettings, check_url, settings_from
from odradek.console.auth import TOKEN_ENV, TokenError, load_token

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
WILDCARDS = ("", "0.0.0.0", "::")
log = logging.getLogger("odradek.console")


def build_parser() -> ArgParser:
    p = ArgParser("console", __doc__ or "")
    add_bootstrap_flags(p)
    p.add_argument("--command-config", metavar="FILE",
                   help="property file with client configs (security settings, ...) for the console's clients")
    p.add_argument("--port", default="8080", help="HTTP port to listen on (default 8080; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--token-file", metavar="FILE",
                   help=f"file holding the access token (default: ${TOKEN_ENV}, else a new random token, printed)")
    p.add_argument("--allowed-host", metavar="NAME", action="append", default=[],
                   help="a host name the console answers to besides localhost, 127.0.0.1, [::1] and --host "
                        "(repeatable; e.g. the name of a proxy in front of it)")
    p.add_argument("--read-only", action="store_true", help="refuse every change (create, delete, alter, reset)")
    p.add_argument("--metrics-url-template", metavar="URL",
                   help="link each broker to its metrics, e.g. 'http://{host}:9404/metrics' "
                        "({id}, {host} and {port} are the broker's)")
    p.add_argument("--connect-url", metavar="URL",
                   help="a Kafka Connect worker's REST API (e.g. http://127.0.0.1:8083): adds the Connectors page")
    p.add_argument("--schema-registry-url", metavar="URL",
                   help="a schema registry's REST API (e.g. http://127.0.0.1:8081) for the Schemas pages and to "
                        "decode records in its wire format (Avro, JSON Schema) in the message browser; without "
                        "it, the registry a broker of the cluster runs (schema_registry_api) if any")
    p.add_argument("--schema-registry-config", metavar="FILE",
                   help="property file for the schema registry client: basic.auth.user.info=USER:PASSWORD, "
                        "schema.registry.ssl.truststore.location (PEM CAs), schema.registry.url")
    p.add_argument("--refresh-ms", default="5000", help="how often pages refresh their values (default 5000)")
    p.add_argument("--lag-sample-ms", default="10000",
                   help="how often consumer-group lag is sampled for the lag charts (default 10000)")
    p.add_argument("--timeout", metavar="MS", default="10000",
                   help="timeout of each request to the cluster, and of the first connection (default 10000); "
                        "a page the cluster does not answer within it says the cluster is unreachable")
    return p


def check_numbers(opts: argparse.Namespace) -> int:
    """Every numeric flag checked (one-line UsageError); returns the port."""
    parse_int(opts.timeout, "--timeout", minimum=1)
    parse_int(opts.refresh_ms, "--refresh-ms", minimum=100)
    parse_int(opts.lag_sample_ms, "--lag-sample-ms", minimum=100)
    return parse_int(opts.port, "--port", minimum=0)


def listen(host: str, port: int) -> socket.socket:
    """The console's listening socket, bound once for the serving processes to come."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CliError(f"Error: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise CliError(f"Error: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def is_loopback(sock: socket.socket) -> bool:
    try:
        return ipaddress.ip_address(sock.getsockname()[0].split("%")[0]).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """How the printed URL names the console: a wildcard address as 127.0.0.1, IPv6 in brackets."""
    if host in WILDCARDS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def registry_settings(opts: argparse.Namespace) -> RegistrySettings | None:
    """The operator's schema registry (--schema-registry-url, or schema.registry.url of
    --schema-registry-config), checked; None when neither names one."""
    props = read_properties_file(opts.schema_registry_config)
    if not opts.schema_registry_url and not any(props.get(k) for k in URL_KEYS):
        if opts.schema_registry_config:  # its credentials would go nowhere, or to a discovered registry
            raise UsageError("Error: --schema-registry-config needs --schema-registry-url URL (or "
                             "schema.registry.url in the file)")
        return None
    settings = settings_from(props, opts.schema_registry_url)
    try:
        check_url(settings.url)
    except ValueError as exc:
        raise UsageError(f"Error: {exc}") from None
    return settings


def execute(argv: list[str]) -> int:
    from odradek.console.supervisor import SESSION_KEY_ENV, Supervisor

    opts = build_parser().parse_args(argv)
    bootstrap_of(opts)
    port = check_numbers(opts)
    registry_settings(opts)
    try:
        token, source = load_token(opts.token_file)
    except TokenError as exc:
        raise CliError(f"Error: {exc}") from None
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stdout, force=True)
    listener = listen(opts.host, port)
    bound = listener.getsockname()[1]
    if not is_loopback(listener):
        log.warning("Listening on %s, which is not a loopback address: anyone who reaches port %d can try to "
                    "log in, and the token and session cookie travel in clear; put a TLS proxy in front "
                    "(and name it with --allowed-host)", opts.host or "every address", bound)
    url = f"http://{url_host(opts.host)}:{bound}/"

    def on_ready(starts: int) -> None:
        if starts:
            log.info("The console serves again at %s (the same token and sessions)", url)
        elif source is None:
            print(f"Console at {url}?token={token}", flush=True)
        else:
            print(f"Console at {url} (log in with the token from {source})", flush=True)

    env = {**os.environ, TOKEN_ENV: token, SESSION_KEY_ENV: secrets.token_hex(32)}
    command = [sys.executable, "-m", "odradek.console.serving", *argv]
    try:
        return asyncio.run(Supervisor(command, env, listener, on_ready).run())
    finally:
        listener.close()


def main(argv: list[str]) -> int:
    return run_tool(lambda: execute(argv))
