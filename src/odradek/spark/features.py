"""Asks a broker which APIs it offers (ApiVersions v0), to decide on idempotence and to check that
transactions can work.

The sink turns on the idempotent producer when the broker offers InitProducerId, and refuses
transactionalIdPrefix up front when the broker does not offer EndTxn. The probe connects as the client
options say (TLS, SASL); when it cannot ask, it answers None (unknown) and the caller keeps its default.
"""

from __future__ import annotations

from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import InitProducerIdRequest

from odradek.config_keys import ConfigError
from odradek.protocol.client_security import PLAINTEXT, ClientSecurity
from odradek.protocol.transport import BlockingConnection
from odradek.security.client_config import client_security

END_TXN_API_KEY = 26


def api_versions(host: str, port: int, timeout: float = 5.0,
                 security: ClientSecurity = PLAINTEXT) -> dict[int, tuple[int, int]]:
    """{api_key: (min_version, max_version)} as the broker at host:port announces them."""
    with BlockingConnection(host, port, "odradek-spark-probe", timeout, security=security) as conn:
        response = conn.request(ApiVersionsRequest(), 0)
    if response.error_code:
        raise ConnectionError(f"ApiVersions answered error code {response.error_code}")
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def offers_api(client: dict[str, str], api_key: int, timeout: float = 5.0) -> bool | None:
    """True/False when a bootstrap broker says whether it offers `api_key`; None when it can't be asked."""
    try:
        security = client_security(client)
    except ConfigError:
        return None
    for server in client.get("bootstrap.servers", "").split(","):
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            continue
        try:
            return api_key in api_versions(host.strip("[]"), int(port), timeout, security)
        except OSError:
            continue
    return None


def supports_idempotence(client: dict[str, str], timeout: float = 5.0) -> bool | None:
    """True/False when a bootstrap broker says whether it offers InitProducerId; None when it can't be asked."""
    return offers_api(client, InitProducerIdRequest.API_KEY, timeout)


def supports_transactions(client: dict[str, str], timeout: float = 5.0) -> bool | None:
    """True/False when a bootstrap broker says whether it offers EndTxn; None when it can't be asked."""
    return offers_api(client, END_TXN_API_KEY, timeout)
