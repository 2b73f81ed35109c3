"""The SparkSession of Odradek's jobs, tests and demo, with the `odradek` format registered.

Local mode by default, or a standalone cluster's master (`spark://HOST:PORT`, e.g. one that `odradek spark
up` started); the driver on 127.0.0.1 only, no web UI, little memory, UTC session time zone. On a cluster the
executors' Python workers run this interpreter (`spark.pyspark.python`) with this package on their
PYTHONPATH (`spark.executorEnv.PYTHONPATH`), so the source and sink they unpickle import the same code the
driver runs; the workers must be on this host or see the same paths. `stop_session` stops
Spark and then the JVM it started, so a process leaves no Java process behind (and may start a new
session afterwards). Creating the session keeps the process's SIGINT handler: pyspark's own (cancel every
job from inside the handler, then raise KeyboardInterrupt) makes a Py4J call while the interrupted thread
is in one, and Ctrl-C then printed "reentrant call" tracebacks; our commands stop on an event instead
(odradek.interrupts).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    "spark.log.level": "WARN",
}



class MasterError(ValueError):
    """A --master that is not a Spark master URL of ours, or a standalone master that does not answer."""


def check_master(master: str, timeout: float = 5.0) -> None:
    """Refuse what is neither local[...] nor spark://HOST:PORT, and a spark:// master nobody listens at
    (Spark itself would retry for a minute, then give up with a stack trace)."""
    if master == "local" or master.startswith("local["):
        return
    m = re.fullmatch(r"spark://(\[[^]]+\]|[^:/]+):(\d+)", master)
    if m is None:
        raise MasterError(f"{master!r} is not a Spark master URL: spark://HOST:PORT or local[N]")
    host, port = m.group(1).strip("[]"), int(m.group(2))
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise MasterError(f"no Spark master at {master}: {exc.strerror or exc} "
                          "(start one with: odradek spark up)") from None


def executor_python_path() -> str:
    """The PYTHONPATH executors' Python workers need: where this package is imported from (src/ of a
    checkout or site-packages), then the driver's own PYTHONPATH."""
    ours = str(Path(__file__).resolve().parents[2])
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys([ours, *(str(Path(p).resolve()) for p in extra)]))


def cluster_settings(master: str) -> dict[str, str]:
    """What a session on a standalone master sets beyond DEFAULTS: the executors' interpreter and
    PYTHONPATH, and their addresses on 127.0.0.1 when the master is there."""
    settings = {"spark.pyspark.python": sys.executable, "spark.executorEnv.PYTHONPATH": executor_python_path(),
                "spark.executorEnv.PYSPARK_PYTHON": sys.executable}
    if "://127.0.0.1:" in master or "://localhost:" in master:
        settings["spark.executorEnv.SPARK_LOCAL_IP"] = "127.0.0.1"
    return settings


def local_session(app_name: str = "odradek", cores: int = 2, conf: Mapping[str, str] | None = None,
                  log_file: Path | None = None) -> SparkSession:
    """Start (or get) a local[cores] session and register format("odradek") in it (see spark_session)."""
    return spark_session(app_name, None, cores=cores, conf=conf, log_file=log_file)


def spark_session(app_name: str = "odradek", master: str | None = None, *, cores: int = 2,
                  conf: Mapping[str, str] | None = None, log_file: Path | None = None) -> SparkSession:
    """Start (or get) a session on `master` (default local[cores]) and register format("odradek") in it.

    With `log_file`, the JVM's own output (start-up banner, log4j, Python worker stderr) goes to that file
    instead of the terminal."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    master = master or f"local[{cores}]"
    cluster = {} if master.startswith("local") else cluster_settings(master)
    settings = {**DEFAULTS, **cluster, **(conf or {})}
    if log_file is not None and SparkContext._active_spark_context is None:
        from pyspark.java_gateway import launch_gateway

        spark_conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))
        with open(log_file, "ab") as out:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": out, "stderr": out})
        with _keeping_sigint_handler():
            SparkContext(conf=spark_conf, gateway=gateway)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _keeping_sigint_handler():
        spark = builder.getOrCreate()
    register(spark)
    return spark


class _SignalsKeepingSigint:
    """The `signal` module as pyspark's context module sees it while a SparkContext starts: installing a
    SIGINT handler is a no-op (the caller's stays), everything else is the real module."""

    def __getattr__(self, name: str) -> Any:
        return getattr(signal, name)

    @staticmethod
    def signal(signum: int, handler: Any) -> Any:
        if signum == signal.SIGINT:
            return signal.getsignal(signum)
        return signal.signal(signum, handler)


@contextmanager
def _keeping_sigint_handler() -> Iterator[None]:
    try:
        import pyspark.core.context as context_module
    except ImportError:  # another pyspark layout: its handler stays, as before
        yield
        return
    real = context_module.signal
    context_module.signal = _SignalsKeepingSigint()  # type: ignore[assignment]
    try:
        yield
    finally:
        context_module.signal = real


def register(spark: SparkSession) -> None:
    """Make format("odradek") available in `spark`."""
    from odradek.spark.source import OdradekDataSource

    spark.dataSource.register(OdradekDataSource)


def _quiet_accumulator_server(sc: SparkContext) -> None:
    """PySpark's accumulator server races the JVM's exit: a handler still reading its connection when the
    JVM closes it gets EOFError, which socketserver prints as a traceback. While stopping, that one is
    expected and stays quiet; anything else is still reported."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is None:
        return
    report = server.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], EOFError | ConnectionError):
            report(request, client_address)

    server.handle_error = handle_error


def stop_session(spark: SparkSession | None, timeout: float = 30.0) -> None:
    """Stop streaming queries, the session, and the JVM this process launched for it."""
    gateway = SparkContext._gateway
    if spark is not None:
        _quiet_accumulator_server(spark.sparkContext)
        for query in spark.streams.active:
            try:
                query.stop()
            except Exception:  # a failed query must not keep the JVM alive
                pass
        spark.stop()
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:
        pass
    if proc is not None:
        try:
            if proc.stdin:
                proc.stdin.close()  # the JVM exits when its stdin closes
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        except OSError:
            pass
    SparkContext._gateway = None
    SparkContext._jvm = None
