"""How a ZooKeeper client of Odradek authenticates and which ACLs its znodes get, as Kafka secures
ZooKeeper: with `zookeeper.set.acl=true` (or a tool whose session authenticates) every znode is created
creator-only (ZooKeeper's `auth` scheme: every identity the session authenticated as, `sasl:<user>` or the
TLS certificate's) plus world READ, except below the sensitive paths (SCRAM credentials, broker configs
with their passwords, delegation tokens), which stay creator-only. `/consumers` (the old consumers' path)
stays open, as in Kafka. Reading the credentials from a JAAS file or the keystore files is the caller's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kazoo.security import ACL

# Kafka's ZkData.SecureRootPaths (with ZkAclStore's), the paths the security migration walks
SECURE_ROOT_PATHS = (
    "/admin", "/brokers", "/cluster", "/config", "/controller", "/controller_epoch", "/isr_change_notification",
    "/latest_producer_id_block", "/log_dir_event_notification", "/delegation_token", "/kafka-acl-extended",
    "/migration", "/feature", "/kafka-acl", "/kafka-acl-changes", "/kafka-acl-extended-changes",
)
# Kafka's ZkData.SensitiveRootPaths: no world READ below these
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token/tokens")
CONSUMERS_PATH = "/consumers"  # kept open: old consumers of other principals write below it
SASL_MECHANISM = "DIGEST-MD5"


def sensitive_path(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SENSITIVE_ROOT_PATHS)


def default_acls(secure: bool, path: str) -> list[ACL]:
    """Kafka's ZkData.defaultAcls: the ACL a znode at `path` (relative to the chroot) is created with."""
    from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE  # kazoo only when asked for

    if not secure or path == CONSUMERS_PATH:
        return list(OPEN_ACL_UNSAFE)
    return list(CREATOR_ALL_ACL) + ([] if sensitive_path(path) else list(READ_ACL_UNSAFE))


@dataclass(frozen=True, slots=True)
class ZkSasl:
    """SASL DIGEST-MD5 credentials (a JAAS `Client` section's DigestLoginModule username/password)."""

    username: str
    password: str

    def kazoo_options(self) -> dict[str, str]:
        return {"mechanism": SASL_MECHANISM, "username": self.username, "password": self.password}


@dataclass(frozen=True, slots=True)
class ZkTls:
    """TLS to ZooKeeper (KIP-515), as PEM files kazoo reads: CA bundle, client certificate and key."""

    ca: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    keyfile_password: str | None = None
    check_hostname: bool = True

    def kazoo_options(self) -> dict[str, object]:
        return {"use_ssl": True, "ca": self.ca, "certfile": self.certfile, "keyfile": self.keyfile,
                "keyfile_password": self.keyfile_password, "verify_certs": True,
                "check_hostname": self.check_hostname}

    @property
    def client_auth(self) -> bool:
        """Whether the session presents a certificate, which ZooKeeper's x509 provider authenticates."""
        return self.certfile is not None


@dataclass(frozen=True, slots=True)
class ZkClientSecurity:
    """Everything a ZooKeeperStore needs to authenticate and to ACL what it creates."""

    secure_acls: bool = False
    sasl: ZkSasl | None = None
    tls: ZkTls | None = None

    def acls(self, path: str) -> list[ACL]:
        return default_acls(self.secure_acls, path)

    def kazoo_options(self) -> dict[str, object]:
        options: dict[str, object] = {}
        if self.sasl is not None:
            options["sasl_options"] = self.sasl.kazoo_options()
        if self.tls is not None:
            options |= self.tls.kazoo_options()
        return options

    @property
    def authenticates(self) -> bool:
        """Whether the session has an identity ZooKeeper can name in an ACL (SASL or a client certificate)."""
        return self.sasl is not None or (self.tls is not None and self.tls.client_auth)


OPEN = ZkClientSecurity()
