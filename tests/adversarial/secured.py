"""The set-up the attacks run against, as the issue's tester had it: SASL/PLAIN users admin, alice and bob,
StandardAuthorizer, `super.users=User:admin`, `allow.everyone.if.no.acl.found=false`. Brokers reach each
other as admin over the SASL listener (no listener is privileged). Also a raw protocol connection that
authenticates as a user, for requests no client library would send."""

from __future__ import annotations

from typing import Any

from odradek.protocol.client_security import ClientSecurity
from odradek.protocol.transport import BlockingConnection

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
SECURED = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "allow.everyone.if.no.acl.found": "false",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "inter.broker.listener.name": "SASL_PLAINTEXT",
}


def listeners(plain_port: int, sasl_port: int) -> str:
    """A PLAINTEXT listener (the harness waits on it; its clients are User:ANONYMOUS) and a SASL one."""
    return f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"


def client_conf(bootstrap: str, user: str) -> dict[str, object]:
    """librdkafka settings of `user` on a SASL_PLAINTEXT listener."""
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": PASSWORDS[user]}


def connect_as(user: str, port: int, timeout: float = 10.0) -> BlockingConnection:
    """A raw protocol connection authenticated as `user` (SASL/PLAIN)."""
    security = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", user, PASSWORDS[user])
    return BlockingConnection("127.0.0.1", port, f"{user}-raw", timeout, security=security)


def follower_fetch(topic: str, partition: int, replica_id: int, fetch_offset: int, leader_epoch: int = -1) -> Any:
    """A Fetch v12 that claims to come from replica `replica_id`, as a follower's fetcher sends it."""
    from kafka.protocol.consumer import FetchRequest

    part = FetchRequest.FetchTopic.FetchPartition(
        partition=partition, current_leader_epoch=leader_epoch, fetch_offset=fetch_offset, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=1 << 20)
    return FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])],
                        forgotten_topics_data=[], rack_id="")
