"""`odradek zookeeper-security-migration`: Kafka's zookeeper-security-migration.sh (ZkSecurityMigrator).

    odradek zookeeper-security-migration --zookeeper.acl secure|unsecure --zookeeper.connect H:P[/chroot]
        [--zookeeper.session.timeout MS] [--zookeeper.connection.timeout MS] [--enable.path.check]
        [--zk-tls-config-file F]

Sets the ACLs of an existing tree, as a broker with `zookeeper.set.acl=true` creates them (secure:
creator-only, world READ outside the sensitive paths) or back to `world:anyone ALL` (unsecure): the chroot
node itself, then every znode below Kafka's root paths (/admin, /brokers, /cluster, /config, /controller,
/kafka-acl*, ...), creating the root paths that are missing. The session must authenticate, as the brokers
do: a JAAS `Client` section through -Djava.security.auth.login.config in $KAFKA_OPTS, or a TLS client
certificate from --zk-tls-config-file."""

from __future__ import annotations

import argparse
from collections import deque
from typing import TYPE_CHECKING

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli.zk_session import quiet_kazoo, tool_security, zk_hosts
from odradek.cluster.zk_security import SECURE_ROOT_PATHS, ZkClientSecurity
from odradek.config_keys import ConfigError
from odradek.security.zk_client import JAAS_PROPERTY, load_tls_config_file

if TYPE_CHECKING:
    from kazoo.client import KazooClient

CONTROLLER = "/controller"
DEFAULT_TIMEOUT_MS = 30_000


def build_parser() -> ArgParser:
    parser = ArgParser("zookeeper-security-migration",
                       "Validates that the ZooKeeper ACLs are set as the brokers set them, secure or unsecure.")
    parser.add_argument("--zookeeper.acl", dest="acl", metavar="secure|unsecure", required=True,
                        help="Indicates whether to make the Kafka znodes in ZooKeeper secure or unsecure. "
                             "The options are 'secure' and 'unsecure'")
    parser.add_argument("--zookeeper.connect", dest="connect", metavar="HOST:PORT[/chroot]", required=True,
                        help="Sets the ZooKeeper connect string (ensemble). This parameter takes a "
                             "comma-separated list of host:port pairs.")
    parser.add_argument("--zookeeper.session.timeout", dest="session_timeout", type=int, default=DEFAULT_TIMEOUT_MS,
                        metavar="MS", help="Sets the ZooKeeper session timeout (default 30000)")
    parser.add_argument("--zookeeper.connection.timeout", dest="connection_timeout", type=int,
                        default=DEFAULT_TIMEOUT_MS, metavar="MS",
                        help="Sets the ZooKeeper connection timeout (default 30000)")
    parser.add_argument("--enable.path.check", dest="path_check", action="store_true",
                        help="Checks if all the root paths exist in ZooKeeper before migration; if not, exit "
                             "the command.")
    parser.add_argument("--zk-tls-config-file", dest="tls_config", metavar="FILE",
                        help="Identifies the file where ZooKeeper client TLS connectivity properties are defined "
                             "(zookeeper.ssl.*, zookeeper.clientCnxnSocket); other properties are ignored")
    return parser


def _security(opts: argparse.Namespace) -> ZkClientSecurity:
    if opts.acl not in ("secure", "unsecure"):
        raise UsageError("Error: --zookeeper.acl must be set to secure or unsecure")
    try:
        tls = load_tls_config_file(opts.tls_config) if opts.tls_config else {}
    except ConfigError as exc:
        raise CliError(f"Error: {exc}") from None
    security = tool_security(tls)
    if not security.authenticates:
        raise CliError(
            "Error: No JAAS configuration file has been specified and no TLS client certificate has been "
            f"specified. Please make sure that you set the system property {JAAS_PROPERTY} (in KAFKA_OPTS) or "
            "provide a ZooKeeper client TLS configuration via --zk-tls-config-file <filename> identifying at least "
            "zookeeper.ssl.client.enable and zookeeper.ssl.keystore.location")
    return ZkClientSecurity(opts.acl == "secure", security.sasl, security.tls)


def migrate(opts: argparse.Namespace) -> int:
    from kazoo.exceptions import KazooException, NoAuthError, NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError

    from odradek.cluster.zk import make_path, new_client

    security = _security(opts)
    zk_hosts(opts.connect)  # a usage error for a malformed connect string
    quiet_kazoo()
    client = new_client(opts.connect, opts.session_timeout / 1000, security)
    try:
        client.start(timeout=opts.connection_timeout / 1000)
    except KazooTimeoutError:
        client.close()
        raise CliError(f"Error: Timed out waiting for connection to ZooKeeper at {opts.connect} "
                       f"within {opts.connection_timeout} ms") from None
    try:
        if opts.path_check:
            missing = [p for p in SECURE_ROOT_PATHS if p != CONTROLLER and client.exists(p) is None]
            if client.exists("/") is None or missing:
                raise CliError(f"Error: ZooKeeper path(s) {', '.join(missing or ['/'])} do not exist at "
                               f"{opts.connect}: is the connect string (and its chroot) right?")
        client.set_acls("/", security.acls("/"))
        changed = 1
        for root in SECURE_ROOT_PATHS:
            if root == CONTROLLER and client.exists(root) is None:
                continue
            make_path(client, root, security)
            changed += _set_recursively(client, root, security, NoNodeError)
        print(f"Set the {opts.acl} ACLs of {changed} znodes at {opts.connect}")
        return 0
    except NoAuthError:
        raise CliError(f"Error: ZooKeeper at {opts.connect} refused to change an ACL (NoAuth): the session "
                       "must authenticate as the znodes' creator") from None
    except KazooException as exc:
        raise CliError(f"Error: ZooKeeper at {opts.connect}: {type(exc).__name__} {exc}".rstrip()) from None
    finally:
        client.stop()
        client.close()


def _set_recursively(client: KazooClient, root: str, security: ZkClientSecurity, gone: type[Exception]) -> int:
    """Set the ACL of `root` and every znode below it (breadth first); a znode deleted meanwhile is skipped."""
    count = 0
    queue = deque([root])
    while queue:
        path = queue.popleft()
        try:
            client.set_acls(path, security.acls(path))
            children = client.get_children(path)
        except gone:
            continue
        count += 1
        queue.extend(f"{path.rstrip('/')}/{child}" for child in children)
    return count


def main(argv: list[str]) -> int:
    return run_tool(lambda: migrate(build_parser().parse_args(argv)))
