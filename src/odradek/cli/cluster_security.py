"""`odradek cluster up --security ssl|sasl_plaintext|sasl_ssl`: what a secured pseudo-cluster needs, made
for trying it out: a private CA and one broker certificate for the cluster's host (PEM, with the
`cryptography` package), a generated password for the `admin` user (SASL/PLAIN, which the brokers also use
among themselves over the same listener), the broker properties for that, and `client.properties` in the
Java client's names for every tool's `--command-config` (and `--producer.config`/`--consumer.config`).

A secured cluster also runs the ACL authorizer with `allow.everyone.if.no.acl.found=false`, as Kafka's
trust model wants: every client authenticates (SASL, or with `ssl` a client certificate: `ssl.client.auth`
is required and `admin.pem` is the admin's), the brokers are super users by their own principal (User:admin
over SASL; their certificate's subject over TLS), the admin of client.properties too, and nobody else
until `odradek acls` grants it.

The ZooKeeper ensemble of a secured cluster is secured as Kafka secures it: the servers take SASL
DIGEST-MD5 (a JAAS `Server` section with the generated password of the `kafka` ZooKeeper user, handed to
them through KAFKA_OPTS), the brokers log in with the `Client` section of `zookeeper_client_jaas.conf` and
run with `zookeeper.set.acl=true`, so their znodes are theirs alone to change (and /config/users,
/config/brokers theirs alone to read). With TLS (`ssl`, `sasl_ssl`) the servers also have a TLS client port
(KIP-515: Netty, the broker certificate, client certificates required), which the brokers use. A tool
reaching ZooKeeper directly (`--zookeeper`, on the plain client port) logs in with
`KAFKA_OPTS=-Djava.security.auth.login.config=<dir>/security/zookeeper_client_jaas.conf`.

Every file holding a secret (keys, passwords, JAAS files, the brokers' server.properties) is written 0600."""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

PROTOCOLS = {"plaintext": "PLAINTEXT", "ssl": "SSL", "sasl_plaintext": "SASL_PLAINTEXT", "sasl_ssl": "SASL_SSL"}
ADMIN_USER = "admin"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
ZK_USER = "kafka"  # the brokers' SASL identity in ZooKeeper (sasl:kafka in the znodes' ACLs)
ZK_DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
ZK_SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
ZK_X509_PROVIDER = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"
VALID_DAYS = 365


@dataclass(frozen=True)
class ClusterSecurity:
    protocol: str  # Kafka's name: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    directory: Path  # where the CA, the broker key and client.properties are

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def broker_pem(self) -> Path:
        return self.directory / "broker.pem"

    @property
    def admin_pem(self) -> Path:
        """The admin's client key and certificate (mutual TLS, `ssl` only)."""
        return self.directory / "admin.pem"

    @property
    def password_file(self) -> Path:
        return self.directory / "admin.password"

    @property
    def client_properties(self) -> Path:
        return self.directory / "client.properties"

    @property
    def zk_password_file(self) -> Path:
        return self.directory / "zookeeper.password"

    @property
    def zk_server_jaas(self) -> Path:
        return self.directory / "zookeeper_server_jaas.conf"

    @property
    def zk_client_jaas(self) -> Path:
        return self.directory / "zookeeper_client_jaas.conf"

    def password(self) -> str:
        return self.password_file.read_text().strip()

    @property
    def enabled(self) -> bool:
        return self.protocol != "PLAINTEXT"

    def zookeeper_config(self, host: str, secure_port: int) -> list[str]:
        """The zoo.cfg lines: SASL for clients, and a TLS client port when there is one."""
        if not self.enabled:
            return []
        lines = [f"authProvider.1={ZK_SASL_PROVIDER}"]
        if secure_port:
            lines += [f"secureClientPort={secure_port}", f"secureClientPortAddress={host}",
                      "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                      f"ssl.keyStore.location={self.broker_pem}", "ssl.keyStore.type=PEM",
                      f"ssl.trustStore.location={self.ca_file}", "ssl.trustStore.type=PEM",
                      "ssl.clientAuth=need",
                      f"authProvider.x509={ZK_X509_PROVIDER}"]
        return lines

    def zookeeper_env(self) -> dict[str, str]:
        """The environment of a ZooKeeper server's launcher: the JAAS file with its users."""
        return {"KAFKA_OPTS": f"-Djava.security.auth.login.config={self.zk_server_jaas}"} if self.enabled else {}

    def prepare(self, host: str) -> None:
        """Write the CA, the broker's key and certificate, the admin password and client.properties, once
        (kept across `cluster down`/`up`, so clients keep working)."""
        if self.protocol == "PLAINTEXT":
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.tls and not (self.ca_file.exists() and self.broker_pem.exists() and self.admin_pem.exists()):
            ca_pem, broker_pem, admin_pem = issue_certificates(host)
            write_private(self.ca_file, ca_pem, 0o644)
            write_private(self.broker_pem, broker_pem)
            write_private(self.admin_pem, admin_pem)
        if self.sasl and not self.password_file.exists():
            write_private(self.password_file, secrets.token_urlsafe(18) + "\n")
        if self.enabled:
            if not self.zk_password_file.exists():
                write_private(self.zk_password_file, secrets.token_urlsafe(18) + "\n")
            zk_password = self.zk_password_file.read_text().strip()
            write_private(self.zk_server_jaas,
                          f'Server {{\n  {ZK_DIGEST_MODULE} required\n  user_{ZK_USER}="{zk_password}";\n}};\n')
            write_private(self.zk_client_jaas, f'Client {{\n  {ZK_DIGEST_MODULE} required\n  username="{ZK_USER}"\n'
                                               f'  password="{zk_password}";\n}};\n')
        write_private(self.client_properties, self.client_text())

    def client_text(self) -> str:
        lines = [f"security.protocol={self.protocol}"]
        if self.sasl:
            lines += ["sasl.mechanism=PLAIN",
                      f'sasl.jaas.config={PLAIN_MODULE} required username="{ADMIN_USER}" password="{self.password()}";']
        if self.tls:
            lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={self.ca_file}"]
        if self.protocol == "SSL":  # the admin's client certificate: the listener requires one
            lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={self.admin_pem}"]
        return "\n".join(lines) + "\n"

    def super_users(self, host: str) -> str:
        """The principals `super.users` names: the brokers' own (how they reach each other) and the admin."""
        if self.sasl:
            return f"User:{ADMIN_USER}"
        return f"User:CN={broker_common_name(host)};User:CN={ADMIN_USER}"

    def broker_properties(self, listener_address: str, host: str) -> dict[str, str]:
        """One listener of this protocol (named after it), which brokers also use among themselves; with
        security, the ACL authorizer (see the module docstring)."""
        props = {"listeners": f"{self.protocol}://{listener_address}"}
        if self.protocol == "PLAINTEXT":
            return props
        props |= {"security.inter.broker.protocol": self.protocol,
                  "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                  "super.users": self.super_users(host), "allow.everyone.if.no.acl.found": "false"}
        if self.protocol == "SSL":
            props["ssl.client.auth"] = "required"
        if self.tls:
            props |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.broker_pem),
                      "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)}
        if self.sasl:
            password = self.password()
            name = self.protocol.lower()
            props |= {
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                f"listener.name.{name}.plain.sasl.jaas.config":
                    f'{PLAIN_MODULE} required username="{ADMIN_USER}" password="{password}" '
                    f'user_{ADMIN_USER}="{password}";',
            }
        props |= {"zookeeper.set.acl": "true", "zookeeper.sasl.jaas.file": str(self.zk_client_jaas)}
        if self.tls:
            props |= {"zookeeper.ssl.client.enable": "true", "zookeeper.ssl.keystore.location": str(self.broker_pem), "zookeeper.ssl.keystore.type": "PEM",
                      "zookeeper.ssl.truststore.location": str(self.ca_file), "zookeeper.ssl.truststore.type": "PEM"}
        return props


def write_private(path: Path, text: str, mode: int = 0o600) -> None:
    """Write `path` with `mode` (owner-only by default) from its creation on, also over an existing file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def broker_common_name(host: str) -> str:
    return f"odradek-broker {host}"


def issue_certificates(host: str) -> tuple[str, str, str]:
    """(CA certificate, broker key + certificate chain, admin key + client certificate chain) in PEM; the
    broker certificate names `host` and localhost/127.0.0.1, so clients verifying host names accept it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Odradek pseudo-cluster"),
                         x509.NameAttribute(NameOID.COMMON_NAME, "Odradek pseudo-cluster CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    try:
        address = ipaddress.ip_address(host.strip("[]"))
        if address != ipaddress.ip_address("127.0.0.1"):
            names.append(x509.IPAddress(address))
    except ValueError:
        if host != "localhost":
            names.append(x509.DNSName(host))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, broker_common_name(host))]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin = (x509.CertificateBuilder()
             .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_USER)]))
             .issuer_name(ca_name).public_key(admin_key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
             .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    ca_pem = ca.public_bytes(pem).decode()

    def chain(k: ec.EllipticCurvePrivateKey, c: x509.Certificate) -> str:
        return (k.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
                + c.public_bytes(pem).decode() + ca_pem)

    return ca_pem, chain(key, cert), chain(admin_key, admin)
