"""Protocol connections for the few requests librdkafka lacks (AlterPartitionReassignments,
ListPartitionReassignments, OffsetDelete): the shared blocking transport, bootstrap by trying each
server in turn, requests for the controller sent to it, and every failure as a one-line CliError.

Kept out of `odradek.admin_client` because kafka-python takes a fifth of a second to import; only the tools that
send such requests load it."""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping
from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataRequest

from odradek.admin_client.errors import CliError
from odradek.config_keys import ConfigError
from odradek.protocol.client import ConnectionLost, ProtocolError
from odradek.protocol.client_security import PLAINTEXT, AuthenticationError, ClientSecurity
from odradek.protocol.transport import BlockingConnection

METADATA_VERSION = 1


def split_servers(bootstrap: str) -> list[tuple[str, int]]:
    """HOST:PORT[,HOST:PORT] as (host, port) pairs ([v6] brackets dropped, an empty host is localhost)."""
    out = []
    for item in bootstrap.split(","):
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise CliError(f"Error: invalid bootstrap server '{item}': expected HOST:PORT")
        out.append((host.strip("[]") or "localhost", int(port)))
    return out


def security_of(props: Mapping[str, str]) -> ClientSecurity:
    """The ClientSecurity of --command-config's properties (TLS, SASL), or a one-line CliError."""
    from odradek.security.client_config import client_security

    try:
        return client_security(props)
    except ConfigError as exc:
        raise CliError(f"Error: {exc}") from None


class BrokerConnection(BlockingConnection):
    """A blocking protocol connection whose request failures are one-line CliErrors; a refused login or an
    untrusted certificate is one too (not worth retrying), other OSErrors are left to the caller."""

    def __init__(self, host: str, port: int, client_id: str | None, timeout_s: float,
                 security: ClientSecurity = PLAINTEXT) -> None:
        try:
            super().__init__(host, port, client_id, timeout_s, security=security)
        except AuthenticationError as exc:
            raise CliError(f"Error: authentication to {host}:{port} failed: {exc}") from None
        except ssl.SSLCertVerificationError as exc:
            raise CliError(f"Error: TLS connection to {host}:{port} failed: {exc.verify_message}") from None

    def request(self, request: ApiMessage, version: int) -> Any:
        try:
            return super().request(request, version)
        except TimeoutError:
            raise CliError(f"Error: timed out waiting for a response from {self.address}") from None
        except ConnectionLost:
            raise CliError(f"Error: {self.address} closed the connection (request not supported?)") from None
        except ProtocolError:
            raise CliError(f"Error: unexpected response from {self.address}") from None
        except OSError as exc:
            raise CliError(f"Error: connection to {self.address} failed: {exc.strerror or exc}") from None


class AdminConnection:
    """A connection to the first reachable bootstrap server plus, on demand, one to the controller."""

    def __init__(self, bootstrap: str, timeout_s: float, client_id: str, connect_timeout_s: float = 10.0,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.security = security
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.client_id = client_id
        self._any: BrokerConnection | None = None
        self._controller: BrokerConnection | None = None

    def __enter__(self) -> AdminConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for c in (self._any, self._controller):
            if c is not None:
                c.close()
        self._any = self._controller = None

    def open(self, host: str, port: int) -> BrokerConnection:
        """A new connection to one broker, secured like this one."""
        return BrokerConnection(host, port, self.client_id, self.timeout_s, self.security)

    def any_broker(self) -> BrokerConnection:
        if self._any is None:
            self._any = self._connect_bootstrap()
        return self._any

    def _connect_bootstrap(self) -> BrokerConnection:
        deadline = time.monotonic() + self.connect_timeout_s
        last = ""
        while True:
            for host, port in split_servers(self.bootstrap):
                try:
                    return self.open(host, port)
                except OSError as exc:
                    last = exc.strerror or str(exc)
            if time.monotonic() >= deadline:
                raise CliError(f"Error: could not reach any broker at {self.bootstrap} within "
                               f"{int(self.connect_timeout_s * 1000)} ms ({last})")
            time.sleep(0.5)

    def metadata(self, topics: list[str] | None) -> Any:
        req = MetadataRequest(topics=None if topics is None else [
            MetadataRequest.MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False)
        return self.any_broker().request(req, METADATA_VERSION)

    def controller(self) -> BrokerConnection:
        if self._controller is not None:
            return self._controller
        md = self.metadata([])
        node = next((b for b in md.brokers if b.node_id == md.controller_id), None)
        if node is None:
            return self.any_broker()  # no controller known: any broker forwards or answers NOT_CONTROLLER
        try:
            self._controller = self.open(node.host, node.port)
        except OSError:
            return self.any_broker()
        return self._controller
