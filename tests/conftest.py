"""Shared fixtures: real brokers and ZooKeeper servers on 127.0.0.1 (free ports, temp dirs), stopped by pid.

`broker` (one per module) and `fresh_broker` (one per test) use the overrides of `broker_config`; a module
that needs other settings redefines that fixture. `brokers` and `module_brokers` start any other broker or
cluster a test needs (see tests/harness.py: BrokerPool), and stop them when the test or module ends.

ZooKeeper: one standalone server serves the whole session (one per xdist worker), each test module in a
chroot of its own (`zk_standalone`); a module that stops or restarts ZooKeeper itself takes a server of its
own (`zk_own_standalone`, `zk_ensemble`).

Markers (registered in pyproject.toml) are set here by directory and by fixture, so that
`pytest -m "not spark and not browser and not cluster"` is the fast inner loop: `spark` (tests/spark),
`browser` (the `browser` fixture: Chromium), `zk` (a ZooKeeper fixture or server), `cluster` (brokers
registered in ZooKeeper), `slow` (long drills, run only with --run-slow).

Under pytest-xdist (`-n 4 --dist loadfile`, as scripts/test.sh runs it) a module runs whole on one worker and
all of tests/spark on one; servers pick free ports and temp dirs per test, and ZooKeeper chroots keep modules
apart, so workers do not collide.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import BrokerPool, BrokerProcess
from tests.zkharness import ZooKeeperChroot, ZooKeeperEnsemble


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run long drills and benchmarks")


ZK_FIXTURES = frozenset({"zk_server", "zk_standalone", "zk_own_standalone", "zk_ensemble"})
# modules that use a ZooKeeper fixture for the store or the tools alone, with no brokers registered in it
ZK_ONLY_MODULES = frozenset({"test_zk_multi.py", "test_zk_session.py", "test_zk_watches.py",
                             "test_zookeeper_tools.py"})

# modules that start ZooKeeper (and brokers in it) themselves, not through a fixture
MODULE_MARKERS = {
    "integration/test_cluster_tool.py": ("zk", "cluster"),
    "integration/test_zookeeper_tools.py": ("zk",),
    "guides/test_quickstart.py": ("zk",),
    "guides/test_ha_cluster.py": ("zk", "cluster"),
    "guides/test_three_brokers_0_11.py": ("zk", "cluster"),
    "guides/test_zookeeper_cluster_0_9.py": ("zk", "cluster"),
    "faults/test_nemeses.py": ("zk", "cluster"),
}


def _markers(item: pytest.Item) -> set[str]:
    """The markers `item` gets from its directory, its module and its fixtures."""
    path = item.path
    fixtures = set(getattr(item, "fixturenames", ()))
    names = set(MODULE_MARKERS.get(f"{path.parent.name}/{path.name}", ()))
    if path.parent.name == "spark":
        names.add("spark")
    if "browser" in fixtures:
        names.add("browser")
    if fixtures & ZK_FIXTURES:
        names.add("zk")
        if path.name not in ZK_ONLY_MODULES:
            names.add("cluster")
    return names


# The order modules run in: the longest-running directories first, so that under xdist the Spark tests (one
# unit of work, below) start at once on one worker while the others work through the rest, and the many short
# unit and fuzz tests fill in at the end.
DIRECTORY_ORDER = ("spark", "guides", "faults", "integration", "jvm", "connect", "adversarial", "fuzz", "unit")


def _directory_rank(item: pytest.Item) -> int:
    name = item.path.parent.name
    return DIRECTORY_ORDER.index(name) if name in DIRECTORY_ORDER else len(DIRECTORY_ORDER)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_directory_rank)  # stable: modules stay whole and in their order within a directory
    slow = not config.getoption("--run-slow")
    skip = pytest.mark.skip(reason="long drill: run with --run-slow")
    for item in items:
        for name in sorted(_markers(item)):
            item.add_marker(name)
        if slow and "slow" in item.keywords:
            item.add_marker(skip)


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pytest-xdist is in the dev extra; without it the suite runs in one process
    pass
else:

    class _ModuleScheduling(LoadScopeScheduling):
        """`--dist loadfile`, except that all of tests/spark is one unit: its modules share one SparkSession
        on one worker (one Spark driver at a time on the machine: with two, the Spark cluster's drill saw a
        Python worker fail to connect back to its loaded driver in time)."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "tests/spark" if module.startswith("tests/spark/") else module

    @pytest.hookimpl(tryfirst=True)  # before xdist's own
    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling | None:
        """The scheduler of `--dist loadfile` (scripts/test.sh): a test module runs on one worker (its
        module-scoped brokers start once), and the Spark tests all on one."""
        if config.getoption("dist") != "loadfile":
            return None
        return _ModuleScheduling(config, log)


@pytest.fixture(scope="module", autouse=True)
def _admin_clients_die_with_the_module() -> Iterator[None]:
    """Set up before, so torn down after, a module's brokers: the admin clients tests.clients cached for
    them go with them."""
    yield
    from tests.clients import forget_all_admins

    forget_all_admins()


def _pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    pool = BrokerPool(tmp_path_factory.mktemp)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    """Brokers and clusters of one test."""
    yield from _pool(tmp_path_factory)


@pytest.fixture(scope="module")
def module_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    """Brokers and clusters shared by a test module."""
    yield from _pool(tmp_path_factory)


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    """server.properties overrides of `broker` and `fresh_broker`; none unless a module redefines this."""
    return {}


@pytest.fixture(scope="module")
def broker(module_brokers: BrokerPool, broker_config: dict[str, str]) -> BrokerProcess:
    """One broker shared by a test module."""
    return module_brokers.start(broker_config)


@pytest.fixture
def fresh_broker(brokers: BrokerPool, broker_config: dict[str, str]) -> BrokerProcess:
    """A broker of a test's own, for tests that restart or kill it."""
    return brokers.start(broker_config)


def _zookeeper(tmp_path_factory: pytest.TempPathFactory, size: int) -> Iterator[ZooKeeperEnsemble]:
    ensemble = ZooKeeperEnsemble(tmp_path_factory.mktemp(f"zk{size}"), size=size)
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop_all()


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """The session's standalone ZooKeeper server, shared by all modules, each in a chroot (`zk_standalone`);
    never stop or restart it in a test (take `zk_own_standalone`)."""
    yield from _zookeeper(tmp_path_factory, 1)


@pytest.fixture(scope="module")
def zk_standalone(zk_server: ZooKeeperEnsemble, request: pytest.FixtureRequest) -> ZooKeeperChroot:
    """A chroot of the shared ZooKeeper server, the module's own: its `connect_string` ends with the chroot."""
    module = re.sub(r"[^A-Za-z0-9_-]", "_", request.module.__name__)
    return ZooKeeperChroot(zk_server, f"/{module}-{uuid.uuid4().hex[:8]}").create()


@pytest.fixture(scope="module")
def zk_own_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """A standalone ZooKeeper server of the module's own, for tests that stop or restart it."""
    yield from _zookeeper(tmp_path_factory, 1)


@pytest.fixture(scope="module")
def zk_ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """Three ZooKeeper servers with a leader (started through `odradek zookeeper-server-start`), the module's
    own: the tests that take it stop and kill its nodes."""
    yield from _zookeeper(tmp_path_factory, 3)


@pytest.fixture(scope="session")
def pem_pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(CA certificate, broker key and certificate chain) as PEM files, the broker's for 127.0.0.1 (trustme)."""
    import trustme

    root = tmp_path_factory.mktemp("pem-pki")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(root / "broker.pem"))
    return root / "ca.pem", root / "broker.pem"

