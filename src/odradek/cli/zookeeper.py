"""`odradek zookeeper-server-start|stop|status`: run Apache ZooKeeper for Odradek's cluster mode.

The counterpart of ZooKeeper's ``zkServer.sh start|start-foreground|stop|status`` and Kafka's
``zookeeper-server-start.sh``: the launcher reads a ``zoo.cfg`` or a Kafka-style
``config/zookeeper.properties``, checks it with :class:`odradek.config.ZooKeeperConfig` (plus
ports and the ``myid`` file of an ensemble member), creates ``dataDir``, writes the config the Java
server reads (``<dataDir>/odradek-zookeeper.cfg``: the user's keys, absolute directories, the
AdminServer off unless asked for and the four-letter words ``status`` needs), and runs
``org.apache.zookeeper.server.quorum.QuorumPeerMain`` with ``java`` directly, so the process is
ours and its pid is known:

* foreground (default): the JVM runs as our child, SIGTERM/SIGINT/SIGHUP are forwarded to it and
  its exit status becomes ours; it gets SIGTERM if we die;
* ``--daemon`` / ``-daemon``: the JVM runs in its own session, output appended to
  ``$LOG_DIR/zookeeper.out`` (default ``<dataDir>/../logs``), pid in ``<dataDir>/zookeeper_server.pid``;
  we return once the client port answers ``ruok`` with ``imok``, or fail with its last log line.

The jars come from Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``, whose
manifest lists its dependencies, plus ``slf4j-simple`` for logging) or from ``$ZOOKEEPER_HOME``
(an Apache release: ``lib/*.jar``). ``$JAVA`` / ``$JAVA_HOME`` choose the JVM, ``$ZK_SERVER_HEAP``
its heap in MB (default 256), ``$KAFKA_OPTS`` (as for Kafka's script: e.g.
``-Djava.security.auth.login.config=zk_jaas.conf`` with a ``Server`` section for SASL), ``$SERVER_JVMFLAGS``
and ``$JVMFLAGS`` add flags, ``$ZOO_LOG_LEVEL``
(e.g. INFO, DEBUG) makes the log chattier than the default (warnings plus role changes).

``zookeeper-server-stop [CONFIG]`` stops the server of that config (the ``QuorumPeerMain`` process
running its generated config), or every server this launcher started.
``zookeeper-server-status CONFIG | --server HOST:PORT`` asks ``srvr`` and prints the mode.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import types
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import psutil

from odradek.admin_client.command import ArgParser, run_tool
from odradek.admin_client.errors import CliError, UsageError
from odradek.cli import processes
from odradek.config import ConfigError, ZooKeeperConfig
from odradek.fsutil import atomic_write

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
GENERATED_CFG = "odradek-zookeeper.cfg"
PID_FILE = "zookeeper_server.pid"
OUT_FILE = "zookeeper.out"
STATUS_WORDS = ("srvr", "stat", "ruok", "mntr", "conf")
DEFAULT_HEAP_MB = 256
DEFAULT_START_TIMEOUT = 60.0
DEFAULT_STOP_TIMEOUT = 30.0
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
NOT_RUNNING = "Error contacting service. It is probably not running."
NOT_SERVING = "This ZooKeeper instance is not currently serving requests"

DEBIAN_JAVA = Path("/usr/share/java")
DEBIAN_ZOOKEEPER_JAR = DEBIAN_JAVA / "zookeeper.jar"
DEBIAN_SLF4J_BINDING = Path("/usr/share/java/slf4j-simple.jar")
# Loggers kept at INFO by default: start-up, bound port, role changes, elections.
INFO_LOGGERS = (
    "org.apache.zookeeper.server.ZooKeeperServerMain",
    "org.apache.zookeeper.server.quorum.QuorumPeerMain",
    "org.apache.zookeeper.server.quorum.QuorumPeer",
    "org.apache.zookeeper.server.quorum.Leader",
    "org.apache.zookeeper.server.quorum.Learner",
    "org.apache.zookeeper.server.NIOServerCnxnFactory",
)
# Loggers kept at ERROR by default: peers that are down are expected in drills (stack traces).
QUIET_LOGGERS = ("org.apache.zookeeper.server.quorum.QuorumCnxManager",)
_CLIENT_SPEC = re.compile(r";\s*(?:(?P<host>[^:;\s]+):)?(?P<port>[0-9]+)\s*$")
_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")


# ---------------------------------------------------------------------------------------------
# The configuration
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerSetup:
    """What the launcher derived from one zoo.cfg / zookeeper.properties."""

    source: Path
    config: ZooKeeperConfig
    data_dir: Path
    client_host: str
    client_port: int
    myid: int | None

    @property
    def generated_cfg(self) -> Path:
        return self.data_dir / GENERATED_CFG

    @property
    def pid_file(self) -> Path:
        return self.data_dir / PID_FILE


def is_ensemble(config: ZooKeeperConfig) -> bool:
    """Whether ZooKeeper runs this config as a quorum member (it runs one server.N standalone)."""
    standalone_enabled = config.props.get("standaloneEnabled", "true").strip().lower() != "false"
    return len(config.servers) > 1 or (bool(config.servers) and not standalone_enabled)


def load_setup(path: str, *, strict: bool = True) -> ServerSetup:
    """Read and check the config at `path`; `strict` also demands the myid file of an ensemble."""
    source = Path(path)
    if not source.is_file():
        raise CliError(f"Error: config file {path} does not exist")
    try:
        config = ZooKeeperConfig.load(source)
        data_dir = Path(config.data_dir).expanduser().absolute()
        myid = read_myid(data_dir, config, required=strict)
        host, port = client_endpoint(config.props, myid)
    except ConfigError as exc:
        raise CliError(f"Error: {source}: {exc}") from None
    if port is None:
        raise CliError(f"Error: {source}: clientPort is not set (nor a ;clientPort in this server's server.N)")
    return ServerSetup(source.absolute(), config, data_dir, host, port, myid)


def check_port(name: str, raw: str) -> int:
    """A TCP port value in 1..65535, or a ConfigError naming the key."""
    text = raw.strip()
    if not text.isdigit() or not 0 < int(text) <= 65535:
        raise ConfigError(f"Invalid value {text} for configuration {name}: a port must be in 1..65535")
    return int(text)


def client_endpoint(props: Mapping[str, str], myid: int | None) -> tuple[str, int | None]:
    """The address to reach this server's client port: clientPortAddress/clientPort, or the
    ``;[host:]port`` suffix of its own server.N entry; wildcard addresses become 127.0.0.1."""
    host = props.get("clientPortAddress", "").strip()
    port = check_port("clientPort", props["clientPort"]) if "clientPort" in props else None
    own = props.get(f"server.{myid}") if myid is not None else None
    match = _CLIENT_SPEC.search(own) if own else None
    if match is not None:
        port = check_port(f"server.{myid}", match.group("port"))
        host = match.group("host") or host
    return ("127.0.0.1" if host in _WILDCARD_HOSTS else host.strip("[]")), port


def read_myid(data_dir: Path, config: ZooKeeperConfig, *, required: bool) -> int | None:
    """The id in ``dataDir/myid``, checked against the server.N ids; None when there is none."""
    path = data_dir / "myid"
    if not config.servers:
        return None
    if not path.is_file():
        if required and is_ensemble(config):
            ids = ", ".join(str(i) for i in sorted(config.servers))
            raise CliError(
                f"Error: {path} is missing: each member of an ensemble needs a myid file in its dataDir"
                f" holding its id (one of {ids})"
            )
        return None
    text = path.read_text(errors="replace").strip()
    if not text.isdigit() or int(text) not in config.servers:
        if not required:
            return None
        ids = ", ".join(str(i) for i in sorted(config.servers))
        raise CliError(f"Error: {path} holds '{text[:40]}', which is not the N of a server.N entry ({ids})")
    return int(text)


def generated_props(setup: ServerSetup) -> dict[str, str]:
    """The user's keys with absolute directories, the AdminServer off unless set, and the
    four-letter words needed by status and start-up checks whitelisted."""
    props = {key: value.strip() for key, value in setup.config.props.items()}
    props["dataDir"] = str(setup.data_dir)
    if props.get("dataLogDir"):
        props["dataLogDir"] = str(Path(props["dataLogDir"]).expanduser().absolute())
    props.setdefault("admin.enableServer", "false")
    props["4lw.commands.whitelist"] = merge_whitelist(props.get("4lw.commands.whitelist"))
    return props


def merge_whitelist(current: str | None) -> str:
    """The user's four-letter-word whitelist plus the words this tool relies on."""
    words = [w.strip() for w in (current or "").split(",") if w.strip()]
    if "*" in words:
        return "*"
    return ",".join(words + [w for w in STATUS_WORDS if w not in words])


def escape_property(text: str, *, key: bool = False) -> str:
    """Escape `text` for a Java .properties file (keys also escape separators and blanks)."""
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        return re.sub(r"([=: #!])", r"\\\1", out)
    return out


def write_properties(path: Path, props: Mapping[str, str], header: str) -> None:
    """Write `props` as a .properties file, atomically; owner-only when a key holds a password (ZooKeeper's
    ssl.keyStore.password and the like)."""
    lines = [f"# {header}"] + [f"{escape_property(k, key=True)}={escape_property(v)}" for k, v in props.items()]
    secret = any("password" in k.lower() for k in props)
    atomic_write(path, "\n".join(lines) + "\n", mode=0o600 if secret else None)


def prepare_dirs(setup: ServerSetup) -> None:
    """Create dataDir (and dataLogDir) as zkServer.sh does."""
    dirs = [setup.data_dir]
    if setup.config.props.get("dataLogDir", "").strip():
        dirs.append(Path(setup.config.props["dataLogDir"].strip()).expanduser().absolute())
    for directory in dirs:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CliError(f"Error: cannot create {directory}: {exc.strerror or exc}") from None


# ---------------------------------------------------------------------------------------------
# The Java command
# ---------------------------------------------------------------------------------------------


def find_java() -> str:
    """$JAVA, else $JAVA_HOME/bin/java, else java on the PATH."""
    candidates = [os.environ.get("JAVA", "")]
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    candidates.append(shutil.which("java") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise CliError("Error: java not found: install a JRE (11+) or set JAVA_HOME")


def zookeeper_classpath() -> list[str]:
    """ZooKeeper's jars: $ZOOKEEPER_HOME (Apache layout) or Debian's /usr/share/java."""
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        jars = sorted(str(p) for p in (*Path(home).glob("*.jar"), *Path(home, "lib").glob("*.jar")))
        if not any("zookeeper" in Path(j).name for j in jars):
            raise CliError(f"Error: no ZooKeeper jars in {home} or {home}/lib (ZOOKEEPER_HOME)")
        return jars
    if not DEBIAN_ZOOKEEPER_JAR.is_file():
        raise CliError(
            "Error: ZooKeeper jars not found: install Debian's zookeeper package or set ZOOKEEPER_HOME"
        )
    jars = [str(DEBIAN_ZOOKEEPER_JAR)]
    if DEBIAN_SLF4J_BINDING.is_file() and not has_slf4j_binding(DEBIAN_ZOOKEEPER_JAR):
        jars.append(str(DEBIAN_SLF4J_BINDING))
    return jars


def netty_jars(props: Mapping[str, str]) -> list[str]:
    """The Netty jars Debian's zookeeper.jar manifest leaves out (codec, resolver, unix common), which its
    NettyServerCnxnFactory needs: added when the config asks for Netty (TLS on secureClientPort)."""
    if "Netty" not in props.get("serverCnxnFactory", "") or os.environ.get("ZOOKEEPER_HOME"):
        return []
    names = ("netty-codec.jar", "netty-resolver.jar", "netty-transport-native-unix-common.jar")
    return [str(DEBIAN_JAVA / n) for n in names if (DEBIAN_JAVA / n).is_file()]


def has_slf4j_binding(jar: Path) -> bool:
    """Whether the manifest Class-Path of `jar` already names an slf4j binding."""
    try:
        with zipfile.ZipFile(jar) as zf:
            manifest = zf.read("META-INF/MANIFEST.MF").decode(errors="replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return False
    joined = manifest.replace("\r\n ", "").replace("\n ", "")
    return any(name in joined for name in ("logback-classic", "slf4j-log4j12", "slf4j-simple", "slf4j-reload4j"))


def logging_flags(classpath: list[str], log_dir: Path, conf_dir: Path) -> list[str]:
    """System properties for the slf4j binding on the classpath: warnings and role changes
    (a logback binding gets a generated logback.xml in `conf_dir`)."""
    level = os.environ.get("ZOO_LOG_LEVEL", "").strip().lower()
    flags = [f"-Dzookeeper.log.dir={log_dir}", "-Dzookeeper.log.file=zookeeper.log",
             "-Dzookeeper.jmx.log4j.disable=true"]
    if any("logback-classic" in Path(j).name for j in classpath):
        return flags + [f"-Dlogback.configurationFile={write_logback_config(conf_dir, level or 'warn')}"]
    prefix = "-Dorg.slf4j.simpleLogger."
    flags += [f"{prefix}defaultLogLevel={level or 'warn'}", f"{prefix}showDateTime=true",
              f"{prefix}dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS", f"{prefix}showThreadName=false",
              f"{prefix}showShortLogName=true"]
    if not level:
        flags += [f"{prefix}log.{name}=info" for name in INFO_LOGGERS]
        flags += [f"{prefix}log.{name}=error" for name in QUIET_LOGGERS]
    return flags


def write_logback_config(conf_dir: Path, level: str) -> Path:
    """A console-only logback.xml (Apache releases bind slf4j to logback)."""
    loggers = ""
    if level == "warn":
        loggers = "".join(f'<logger name="{n}" level="INFO"/>' for n in INFO_LOGGERS)
        loggers += "".join(f'<logger name="{n}" level="ERROR"/>' for n in QUIET_LOGGERS)
    text = (
        '<configuration><appender name="C" class="ch.qos.logback.core.ConsoleAppender">'
        "<encoder><pattern>%d{ISO8601} %-5level %logger{0} - %msg%n</pattern></encoder></appender>"
        f'{loggers}<root level="{level.upper()}"><appender-ref ref="C"/></root></configuration>\n'
    )
    path = conf_dir / "odradek-zookeeper-logback.xml"
    path.write_text(text, encoding="utf-8")
    return path


def heap_flags() -> list[str]:
    """-Xmx from $ZK_SERVER_HEAP (MB), default 256 MB: three servers fit a small box."""
    raw = os.environ.get("ZK_SERVER_HEAP", "").strip()
    mb = int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_HEAP_MB
    return [f"-Xmx{mb}m", "-Xms16m"]


def java_command(setup: ServerSetup, log_dir: Path) -> list[str]:
    """The full command line of the ZooKeeper server for `setup`."""
    classpath = zookeeper_classpath() + netty_jars(setup.config.props)
    extra = [*shlex.split(os.environ.get("KAFKA_OPTS", "")), *shlex.split(os.environ.get("SERVER_JVMFLAGS", "")),
             *shlex.split(os.environ.get("JVMFLAGS", ""))]
    return [
        find_java(),
        *heap_flags(),
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        *logging_flags(classpath, log_dir, setup.data_dir),
        *extra,
        "-cp",
        os.pathsep.join(classpath),
        MAIN_CLASS,
        str(setup.generated_cfg),
    ]


def daemon_log_dir(setup: ServerSetup) -> Path:
    """$LOG_DIR, else <dataDir>/../logs."""
    raw = os.environ.get("LOG_DIR", "").strip()
    return Path(raw).absolute() if raw else setup.data_dir.parent / "logs"


# ---------------------------------------------------------------------------------------------
# Talking to a server
# ---------------------------------------------------------------------------------------------


def four_letter(host: str, port: int, word: str, timeout: float = 3.0) -> str | None:
    """Send a four-letter word and return the whole answer, or None when nobody answers."""
    chunks: list[bytes] = []
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(word.encode("ascii"))
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    except OSError:
        if not chunks:
            return None
    return b"".join(chunks).decode("utf-8", errors="replace")


def server_mode(host: str, port: int, timeout: float = 3.0) -> str | None:
    """'leader', 'follower', 'standalone', 'observer' from `srvr`; None when not serving."""
    answer = four_letter(host, port, "srvr", timeout)
    return parse_mode(answer) if answer else None


def parse_mode(srvr: str) -> str | None:
    """The value of the ``Mode:`` line of a srvr/stat answer."""
    match = re.search(r"^Mode:\s*(\S+)", srvr, re.MULTILINE)
    return match.group(1) if match else None


def port_answers(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------


def is_server(args: list[str], generated_cfg: Path | None = None) -> bool:
    """Whether `args` run a QuorumPeerMain started by this launcher (with that generated config)."""
    if MAIN_CLASS not in args:
        return False
    if generated_cfg is not None:
        return args[-1] == str(generated_cfg)
    return Path(args[-1]).name == GENERATED_CFG


def servers(generated_cfg: Path | None = None) -> list[psutil.Process]:
    """The ZooKeeper servers started by this launcher (only the one of that config, when given)."""
    return processes.find(partial(is_server, generated_cfg=generated_cfg))


def find_servers(generated_cfg: Path | None = None) -> list[int]:
    """The pids of :func:`servers` (for showing and recording them)."""
    return [p.pid for p in servers(generated_cfg)]


def last_log_line(path: Path, offset: int) -> str:
    """The most telling line written to `path` after `offset`: the root cause of the last Java
    exception, else the last exception or ERROR line, else the last line."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            lines = fh.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    skip = re.compile(r"\s+at |\s*\.\.\. \d+ more|.*Exiting JVM with code")
    text = [ln.strip() for ln in lines if ln.strip() and not skip.match(ln)]
    for pattern in (r"^Caused by: ", r"^[\w.$]+(Exception|Error)\b", r"\bERROR\b"):
        telling = [ln for ln in text if re.search(pattern, ln)]
        if telling:
            return telling[-1].removeprefix("Caused by: ")
    return text[-1] if text else ""


# ---------------------------------------------------------------------------------------------
# zookeeper-server-start
# ---------------------------------------------------------------------------------------------


def tool_parser(name: str, description: str, *, config_optional: bool) -> ArgParser:
    """The parser of one of the three tools, with its CONFIG argument."""
    parser = ArgParser(name, description, allow_abbrev=False)
    parser.add_argument("config", metavar="CONFIG", nargs="?" if config_optional else None,
                        help="zoo.cfg or zookeeper.properties")
    return parser


def start_parser() -> ArgParser:
    parser = tool_parser(
        "zookeeper-server-start",
        "Start a ZooKeeper server from a zoo.cfg or Kafka's config/zookeeper.properties.\n\n"
        "Foreground by default (Ctrl-C or SIGTERM stops it); with --daemon it runs in the\n"
        "background, output in $LOG_DIR/zookeeper.out (default <dataDir>/../logs), pid in\n"
        "<dataDir>/zookeeper_server.pid. An ensemble member (server.N entries) needs a myid file\n"
        "in its dataDir.",
        config_optional=False,
    )
    parser.add_argument("--daemon", "-daemon", action="store_true", help="run in the background")
    parser.add_argument("--timeout", type=float, default=DEFAULT_START_TIMEOUT, metavar="SECONDS",
                        help="--daemon: how long to wait for the server to answer (default 60)")
    return parser


def start(args: Any) -> int:
    setup = load_setup(args.config)
    for warning in setup.config.warnings:
        print(f"WARNING: {warning}", file=sys.stderr)
    already = find_servers(setup.generated_cfg)
    if already:
        raise CliError(f"Error: zookeeper is already running as process {already[0]} (config {setup.source})")
    if port_answers(setup.client_host, setup.client_port):
        raise CliError(f"Error: client port {setup.client_host}:{setup.client_port} is already in use")
    prepare_dirs(setup)
    write_properties(
        setup.generated_cfg,
        generated_props(setup),
        f"Generated by odradek zookeeper-server-start from {setup.source}; edit that file instead.",
    )
    if args.daemon:
        return run_daemon(setup, args.timeout)
    return run_foreground(java_command(setup, daemon_log_dir(setup)))


def run_foreground(cmd: list[str]) -> int:
    """Run the server as our child, forwarding termination signals; its status is ours."""
    proc = subprocess.Popen(cmd, process_group=0, preexec_fn=die_with_parent)

    def forward(signum: int, _frame: types.FrameType | None) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)
    code = proc.wait()
    return 128 - code if code < 0 else code


def die_with_parent() -> None:
    """In the child before exec: default dispositions for the forwarded signals (an ignored SIGINT
    would be inherited by the JVM), and SIGTERM when the launcher dies (Linux prctl)."""
    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_daemon(setup: ServerSetup, timeout: float) -> int:
    """Start the server in the background; wait for `imok` on its client port."""
    log_dir = daemon_log_dir(setup)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"Error: cannot create log directory {log_dir}: {exc.strerror or exc}") from None
    cmd = java_command(setup, log_dir)
    out_path = log_dir / OUT_FILE
    print("Starting zookeeper ... ", end="", flush=True)
    with open(out_path, "ab") as out:
        offset = out.tell()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=log_dir, start_new_session=True)
    setup.pid_file.write_text(str(proc.pid))
    problem = wait_until_serving(proc, setup, timeout)
    if problem is None:
        print("STARTED", flush=True)
        return 0
    print("FAILED TO START", flush=True)
    if proc.poll() is None:
        processes.terminate([psutil.Process(proc.pid)], DEFAULT_STOP_TIMEOUT, kill=True)
    setup.pid_file.unlink(missing_ok=True)
    detail = last_log_line(out_path, offset)
    raise CliError(f"Error: {problem}{': ' + detail if detail else ''} (log: {out_path})")


def wait_until_serving(proc: subprocess.Popen[bytes], setup: ServerSetup, timeout: float) -> str | None:
    """None once the server answers ruok with imok (and, standalone, srvr with its mode: an
    ensemble member cannot serve before a quorum is up); else why not (it exited, time ran out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            return f"zookeeper exited with status {code}"
        if four_letter(setup.client_host, setup.client_port, "ruok", timeout=1.0) == "imok" and (
            is_ensemble(setup.config) or server_mode(setup.client_host, setup.client_port, 1.0) is not None
        ):
            return None
        time.sleep(0.1)
    return f"zookeeper did not answer on {setup.client_host}:{setup.client_port} within {timeout:.0f} s"


# ---------------------------------------------------------------------------------------------
# zookeeper-server-stop
# ---------------------------------------------------------------------------------------------


def stop_parser() -> ArgParser:
    parser = tool_parser(
        "zookeeper-server-stop",
        "Stop ZooKeeper servers started with odradek zookeeper-server-start (SIGTERM, then wait).\n\n"
        "With CONFIG, only the server of that config; without, every one this launcher started.",
        config_optional=True,
    )
    parser.add_argument("--timeout", type=float, default=DEFAULT_STOP_TIMEOUT, metavar="SECONDS",
                        help="how long to wait for the servers to exit (default 30)")
    return parser


def stop(args: Any) -> int:
    setup = load_setup(args.config, strict=False) if args.config else None
    procs = servers(setup.generated_cfg if setup else None)
    print("Stopping zookeeper ... ", end="", flush=True)
    if not procs:
        print("no zookeeper to stop", flush=True)
        if setup is not None:
            setup.pid_file.unlink(missing_ok=True)
        return 1
    left = processes.terminate(procs, args.timeout)
    if left:
        print("FAILED", flush=True)
        raise CliError(f"Error: still running after {args.timeout:.0f} s: pid {', '.join(str(p.pid) for p in left)}")
    if setup is not None:
        setup.pid_file.unlink(missing_ok=True)
    print("STOPPED", flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# zookeeper-server-status
# ---------------------------------------------------------------------------------------------


def status_parser() -> ArgParser:
    parser = tool_parser(
        "zookeeper-server-status",
        "Print a ZooKeeper server's mode (leader, follower, standalone), asked with 'srvr'.",
        config_optional=True,
    )
    parser.add_argument("--server", metavar="HOST:PORT", help="ask this server instead of a config's")
    parser.add_argument("--timeout", type=float, default=3.0, metavar="SECONDS",
                        help="connect/read timeout (default 3)")
    return parser


def parse_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise UsageError(f"Error: --server expects HOST:PORT, got '{text}'")
    return host.strip("[]"), int(port)


def status(args: Any) -> int:
    if args.server and args.config:
        raise UsageError("Error: give either CONFIG or --server, not both")
    if args.server:
        host, port = parse_host_port(args.server)
    elif args.config:
        setup = load_setup(args.config, strict=False)
        host, port = setup.client_host, setup.client_port
    else:
        raise UsageError('Error: Missing required argument "[CONFIG or --server HOST:PORT]"')
    print(f"Client port found: {port}. Client address: {host}.", flush=True)
    answer = four_letter(host, port, "srvr", args.timeout)
    if not answer:
        raise CliError(NOT_RUNNING)
    mode = parse_mode(answer)
    if mode is None:
        raise CliError(f"Error contacting service. {describe_non_answer(answer)}")
    print(f"Mode: {mode}")
    return 0


def describe_non_answer(answer: str) -> str:
    """Explain a srvr answer without a Mode line."""
    if NOT_SERVING in answer:
        return "It is running but not serving requests (an ensemble member without a quorum?)."
    if "whitelist" in answer:
        return "srvr is not in its 4lw.commands.whitelist."
    return f"Unexpected answer: {answer.strip().splitlines()[0][:120]}"


# ---------------------------------------------------------------------------------------------
# Tool entry points
# ---------------------------------------------------------------------------------------------


def tool_main(parser: Callable[[], ArgParser], action: Callable[[Any], int]) -> Callable[[list[str]], int]:
    """The entry function of a tool: parse `argv`, run `action`, one-line errors (see run_tool)."""
    return lambda argv: run_tool(lambda: action(parser().parse_args(argv)))


start_main = tool_main(start_parser, start)  # odradek zookeeper-server-start [--daemon] CONFIG
stop_main = tool_main(stop_parser, stop)  # odradek zookeeper-server-stop [CONFIG]
status_main = tool_main(status_parser, status)  # odradek zookeeper-server-status CONFIG | --server HOST:PORT


def main(argv: list[str]) -> int:
    """`python -m odradek.cli.zookeeper start|stop|status ...` (`odradek` calls the three `*_main`)."""
    commands: dict[str, Callable[[list[str]], int]] = {"start": start_main, "stop": stop_main,
                                                       "status": status_main}
    if not argv or argv[0] not in commands:
        print("usage: odradek zookeeper-server-start|zookeeper-server-stop|zookeeper-server-status ...",
              file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
