"""All the logs of one broker under `log.dirs`: loading and recovery at start-up, checkpoint files,
placement of new partitions, retention, log cleaner and flush passes, clean shutdown.

Each log dir holds `<topic>-<partition>` directories (and `<topic>-<partition>.<uuid>-future` ones: replicas
being moved into it, see storage/log_mover.py) plus Kafka's bookkeeping files:
`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`, `replication-offset-checkpoint`,
`cleaner-offset-checkpoint` (each compacted log's first dirty offset), `.kafka_cleanshutdown` (present
only while the broker is stopped after a clean shutdown) and `.lock`.

Offline log dirs (Kafka's LogManager with its LogDirFailureChannel): an I/O error in a dir is reported to
the manager's failure channel (storage/failure.py); at once every log in the dir refuses all operations
(`_dir_failed`, on the reporting thread), and the broker then calls `handle_dir_failure` (off the event
loop), which forgets the dir's logs (remembering which partitions were there, `offline_partitions`), stops
the moves into or out of it and closes their files. Nothing writes to the dir again: no checkpoints,
flushes, retention or cleaning; new partitions go to the other dirs. A dir that fails while the logs load
fails the start-up.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from odradek.fsutil import atomic_write, fsync_dir, is_temporary
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.storage.cleaner import CleanerConfig, CleaningAborted, compact, run_cleanup
from odradek.storage.dir_names import MAX_FILE_NAME, future_dir_name, parse_future_dir, parse_topic_partition
from odradek.storage.failure import LogDirFailureChannel, io_error_of
from odradek.storage.log import Log, now_ms
from odradek.storage.log_config import LogConfig
from odradek.storage.log_mover import LogDirMover
from odradek.storage.segment import StorageError

log = logging.getLogger("odradek.storage")

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
# what checkpoint() writes by default (the cleaner offsets go with the recovery points)
CHECKPOINT_FILES = (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT)
LOCK_FILE = ".lock"
CHECKPOINT_VERSION = 0

TopicPartition = tuple[str, int]

__all__ = ["CleanerConfig", "LogManager", "StorageError", "read_checkpoint", "write_checkpoint"]


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """Kafka's offset checkpoint text: version line `0`, entry count, then `topic partition offset`."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    try:
        if int(lines[0]) != CHECKPOINT_VERSION:
            raise ValueError(f"unrecognised version {lines[0]}")
        count = int(lines[1])
        entries = {}
        for line in lines[2 : 2 + count]:
            topic, partition, offset = line.split(" ")
            entries[(topic, int(partition))] = int(offset)
        if len(entries) != count:
            raise ValueError(f"expected {count} entries, found {len(entries)}")
        return entries
    except (ValueError, IndexError) as exc:
        log.warning("Ignoring malformed checkpoint file %s: %s", path, exc)
        return {}


def write_checkpoint(path: Path, entries: Mapping[TopicPartition, int]) -> None:
    """Write Kafka's checkpoint format atomically (see :mod:`odradek.fsutil`)."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(entries.items())]
    atomic_write(path, "\n".join(lines) + "\n")


class LogManager:
    """Every partition log of this broker. Call `startup()` before anything else."""

    def __init__(
        self,
        log_dirs: Iterable[Path | str],
        default_props: Mapping[str, str] | None = None,
        *,
        time_ms: Callable[[], int] = now_ms,
        cleaner: CleanerConfig | None = None,
        failures: LogDirFailureChannel | None = None,
    ) -> None:
        self.log_dirs = [Path(d).absolute() for d in log_dirs]
        if not self.log_dirs:
            raise StorageError(message="log.dirs is empty")
        self.default_props = dict(default_props or {})
        LogConfig.from_props(self.default_props)  # fail fast on a bad default
        self._time = time_ms
        self._topic_props: dict[str, dict[str, str]] = {}
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._dir_counts: dict[Path, int] = {}  # partitions per log dir, for placing new ones
        self._lock_fds: dict[Path, int] = {}
        self._mutex = threading.Lock()
        self.cleaner = cleaner or CleanerConfig()
        self._cleaner_lock = threading.Lock()  # one cleaner pass at a time; shutdown waits for it
        # checkpoint files are written from several threads (periodic checkpoints, the cleaner, shutdown,
        # a topic turning compacted): one writer at a time, each reading the logs and their offsets once it
        # holds this lock, so the last file written never holds older ones than a file before it. Taken
        # after `_mutex` by those holding it, never the other way round.
        self._checkpoint_lock = threading.Lock()
        self._cleaner_stopping = False
        self._uncleanable: set[TopicPartition] = set()  # logs whose cleaning failed (Kafka skips them too)
        # replicas being moved to another log dir: their future logs (each in the dir it moves to), the
        # mover, the dirs AlterReplicaLogDirs asked for replicas not created yet, and who to tell of a swap
        self._futures: dict[TopicPartition, Log] = {}
        self._preferred_dirs: dict[TopicPartition, Path] = {}
        self._alter_lock = threading.Lock()  # one AlterReplicaLogDirs change at a time
        self.mover = LogDirMover(self)
        self.replaced_listeners: list[Callable[[str, int, Log], None]] = []
        # I/O errors are reported here; partitions whose log was in a dir that failed, with that dir
        self.failures = failures or LogDirFailureChannel()
        self.failures.listeners.insert(0, self._dir_failed)
        self._offline_logs: dict[TopicPartition, Path] = {}

    # --- start-up ----------------------------------------------------------------------------

    def startup(self, topic_configs: Mapping[str, Mapping[str, str]] | None = None) -> None:
        """Check and lock every log dir, then load (recovering where needed) every partition in them.
        `topic_configs` are per-topic overrides already known (e.g. from the metadata store)."""
        for topic, props in (topic_configs or {}).items():
            self._topic_props[topic] = dict(props)
        for d in self.log_dirs:
            self._prepare_dir(d)
        started = time.monotonic()
        log.info("Loading logs from log dirs %s", [str(d) for d in self.log_dirs])
        clean_dirs = [d for d in self.log_dirs if (d / CLEAN_SHUTDOWN_FILE).exists()]
        for d in self.log_dirs:
            self._load_dir(d, clean=d in clean_dirs)
        self._resume_moves()
        for d in clean_dirs:
            (d / CLEAN_SHUTDOWN_FILE).unlink()
        for loaded in [*self._logs.values(), *self._futures.values()]:
            if loaded.config.compact and loaded.cleaner_checkpoint is None:
                loaded.cleaner_checkpoint = loaded.log_start_offset  # written just below
        self.checkpoint()
        for d in self.failures.offline_dirs():  # Kafka starts without it; here the start-up fails
            raise StorageError(message=f"Log dir {d} failed while loading: {self.failures.cause(d)}")
        log.info("Loaded %d logs in %d ms", len(self._logs), int((time.monotonic() - started) * 1000))

    def _prepare_dir(self, d: Path) -> None:
        try:
            d.mkdir(parents=True, exist_ok=True)
            probe = d / f".odradek-write-test-{os.getpid()}"
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            probe.unlink()
        except OSError as exc:
            raise StorageError(
                message=f"Log directory {d} is not a creatable, writable directory: {exc}"
            ) from exc
        fd = os.open(d / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StorageError(
                message=f"Failed to acquire lock on file {LOCK_FILE} in {d}. "
                "A broker in another process or thread is using this directory."
            ) from exc
        self._lock_fds[d] = fd

    def _load_dir(self, d: Path, clean: bool) -> None:
        if not clean:
            log.info("Attempting recovery for all logs in %s since no clean shutdown file was found", d)
        recovery_points = read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
        start_offsets = read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = read_checkpoint(d / REPLICATION_OFFSET_CHECKPOINT)
        cleaner_offsets = read_checkpoint(d / CLEANER_OFFSET_CHECKPOINT)
        for entry in sorted(os.scandir(d), key=lambda e: e.name):
            if not entry.is_dir():
                if is_temporary(entry.name):  # a checkpoint being replaced when the broker stopped
                    os.unlink(entry.path)
                continue
            name = entry.name
            if name.endswith("-delete"):
                log.info("Deleting %s, a partition directory left from an interrupted delete", entry.path)
                shutil.rmtree(entry.path, ignore_errors=True)
                continue
            future = parse_future_dir(name)
            try:
                key = future or parse_topic_partition(name)
            except ValueError:
                log.warning("Skipping %s: not a <topic>-<partition> directory", entry.path)
                continue
            found = self._futures if future else self._logs
            if key in found:
                raise StorageError(
                    message=f"Duplicate log directories for {key[0]}-{key[1]} are found in both "
                            f"{found[key].dir.parent} and {d}."
                )
            loaded = Log(
                entry.path,
                self._config_for(key[0]),
                recovery_point=recovery_points.get(key, 0),
                log_start_offset=start_offsets.get(key, 0),
                high_watermark=high_watermarks.get(key, 0),
                clean_shutdown=clean,
                time_ms=self._time,
                cleaner_checkpoint=cleaner_offsets.get(key),
                failures=self.failures,
            )
            if future:
                self._futures[key] = loaded
            else:
                self._register(key, d, loaded)

    def _resume_moves(self) -> None:
        """Future logs found at load: a move under way resumes (the mover starts with `start_moves`);
        one without a current log had passed its commit (the current directory renamed `-delete`) and
        holds everything, so it becomes the log."""
        for key, future in list(self._futures.items()):
            if key in self._logs:
                log.info("Resuming the move of %s-%d to %s", key[0], key[1], future.dir.parent)
                self.mover.add(key, future, self._logs[key])
                continue
            del self._futures[key]
            final = future.dir.parent / f"{key[0]}-{key[1]}"
            log.info("Completing the move of %s-%d to %s (interrupted after its swap)", key[0], key[1],
                     future.dir.parent)
            future.rename_dir(final)
            fsync_dir(final.parent)
            self._register(key, final.parent, future)

    def _register(self, key: TopicPartition, d: Path, partition_log: Log) -> None:
        self._logs[key] = partition_log
        self._dir_of[key] = d
        self._dir_counts[d] = self._dir_counts.get(d, 0) + 1

    def _config_for(self, topic: str) -> LogConfig:
        return LogConfig.from_props({**self.default_props, **self._topic_props.get(topic, {})})

    # --- access ------------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def get_or_create_log(self, topic: str, partition: int, props: Mapping[str, str] | None = None) -> Log:
        """The partition's log, created in the log dir holding the fewest partitions if new. `props`,
        when given, become the topic's overrides (merged over the default props)."""
        key = (topic, partition)
        with self._mutex:
            existing = self._logs.get(key)
            if existing is not None:
                return existing
            self._check_not_offline(key)
            created = self._create_locked(key, self._topic_config_locked(topic, props))
            if created.config.compact:
                self._mark_compacted_locked([created])
            return created

    def create_logs(self, topic: str, partitions: Iterable[int], props: Mapping[str, str] | None = None,
                    chunk: int = 200) -> None:
        """Create the logs of these partitions of one topic that do not exist yet (a worker thread's job:
        it touches the disk). The config is worked out once; each log dir that received new partition
        directories is fsynced once per chunk, and the manager's mutex is let go between chunks."""
        todo = sorted(set(partitions))
        for i in range(0, len(todo), chunk):
            with self._mutex:
                config = self._topic_config_locked(topic, props)
                created = [self._create_locked((topic, p), config) for p in todo[i:i + chunk]
                           if (topic, p) not in self._logs and (topic, p) not in self._offline_logs]
                if created and config.compact:
                    self._mark_compacted_locked(created)
            for d in {lg.dir.parent for lg in created}:
                try:
                    fsync_dir(d)
                except OSError as exc:  # the dir failed: its new logs went offline with it
                    self._report(d, f"creating logs of {topic}", exc)

    def _topic_config_locked(self, topic: str, props: Mapping[str, str] | None) -> LogConfig:
        if props is None:
            return self._config_for(topic)
        self._topic_props[topic] = dict(props)
        return LogConfig.from_props({**self.default_props, **props})

    def _check_not_offline(self, key: TopicPartition) -> None:
        d = self._offline_logs.get(key)
        if d is not None:
            raise StorageError(message=f"Cannot create log for {key[0]}-{key[1]} because its log dir {d} is offline")

    def _create_locked(self, key: TopicPartition, config: LogConfig) -> Log:
        online = self.online_dirs
        if not online:
            raise StorageError(message=f"Cannot create log for {key[0]}-{key[1]}: every log dir is offline")
        d = self._preferred_dirs.pop(key, None)
        if d is None or d not in online:
            d = min(online, key=lambda x: self._dir_counts.get(x, 0))
        try:
            created = Log(d / f"{key[0]}-{key[1]}", config, time_ms=self._time, failures=self.failures)
        except OSError as exc:  # the dir failed: the replica is offline with it (Kafka's getOrCreateLog)
            if io_error_of(exc) is None:
                raise
            self._offline_logs[key] = d
            message = f"Error while creating log for {key[0]}-{key[1]} in dir {d}: {exc}"
            self.failures.report(d, message)
            raise StorageError(message=message) from exc
        log.info("Created log for partition %s-%d in %s", key[0], key[1], d)
        self._register(key, d, created)
        return created

    def logs(self) -> list[Log]:
        with self._mutex:
            return list(self._logs.values())

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get((topic, partition))

    @property
    def online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if not self.failures.is_offline(d)]

    def is_offline(self, topic: str, partition: int) -> bool:
        """Whether the partition's log is in a dir that failed (no lock: a request path asks)."""
        return (topic, partition) in self._offline_logs

    def offline_partitions(self) -> dict[TopicPartition, Path]:
        """Partitions whose log is in a dir that failed (their replicas here are offline), with that dir."""
        with self._mutex:
            return dict(self._offline_logs)

    def topic_props(self, topic: str) -> dict[str, str]:
        """The topic's override props (not the defaults)."""
        return dict(self._topic_props.get(topic, {}))

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove the partition's log and its directory (and a future log moving it); False if there was
        none."""
        key = (topic, partition)
        self._drop_future(key)
        with self._mutex:
            doomed = self._logs.pop(key, None)
            d = self._dir_of.pop(key, None)
            if d is not None:
                self._dir_counts[d] -= 1
        if doomed is None:
            with self._mutex:  # a replica in a failed dir: nothing to delete there, nothing to serve
                return self._offline_logs.pop(key, None) is not None
        self._uncleanable.discard(key)
        doomed.delete()
        return True

    def update_topic_config(self, topic: str, props: Mapping[str, str]) -> None:
        """Replace the topic's overrides with `props` and apply the result to its logs."""
        config = LogConfig.from_props({**self.default_props, **props})
        with self._mutex:
            self._topic_props[topic] = dict(props)
            targets = [lg for (t, _), lg in [*self._logs.items(), *self._futures.items()] if t == topic]
            if config.compact:
                self._mark_compacted_locked(targets)
        for target in targets:
            target.update_config(config)

    def update_defaults(self, default_props: Mapping[str, str]) -> None:
        """Replace the broker defaults (a dynamic broker config changed) and apply them to every log
        whose config they change; a topic's own overrides still win."""
        LogConfig.from_props(default_props)  # a bad default fails here, before anything changes
        with self._mutex:
            self.default_props = dict(default_props)
            configs: dict[str, LogConfig] = {}
            changed: list[tuple[Log, LogConfig]] = []
            for (topic, _), lg in [*self._logs.items(), *self._futures.items()]:
                if topic not in configs:
                    configs[topic] = self._config_for(topic)
                if lg.config != configs[topic]:
                    changed.append((lg, configs[topic]))
            self._mark_compacted_locked([lg for lg, config in changed if config.compact])
        for lg, config in changed:
            lg.update_config(config)

    def _mark_compacted_locked(self, targets: list[Log]) -> None:
        """Give compacted logs an entry in cleaner-offset-checkpoint before they act on the policy. Logs
        load before their topic's config is known, and recovery accepts offset gaps (which compaction
        leaves, and which followers of a compacted topic copy) only in logs holding such an entry; so
        the entry goes to disk before any gap can. Call holding the manager's mutex."""
        marked = [lg for lg in targets if lg.cleaner_checkpoint is None]
        if not marked:
            return
        for lg in marked:
            lg.cleaner_checkpoint = lg.log_start_offset  # the first dirty offset it stands for anyway
        for d in {lg.dir.parent for lg in marked}:
            self._write_cleaner_checkpoint(d)

    # --- moving replicas between log dirs (AlterReplicaLogDirs) --------------------------------

    def futures(self) -> list[Log]:
        with self._mutex:
            return list(self._futures.values())

    def future_log(self, topic: str, partition: int) -> Log | None:
        return self._futures.get((topic, partition))

    def log_dir_named(self, path: str) -> Path | None:
        """The configured log dir whose absolute path is `path` (Kafka compares the strings)."""
        return next((d for d in self.log_dirs if str(d) == path), None)

    def dir_online(self, d: Path) -> bool:
        return not self.failures.is_offline(d) and d.is_dir() and os.access(d, os.W_OK | os.X_OK)

    def start_moves(self, run_swap: Callable[[Callable[[], None]], None] | None = None) -> None:
        """Start the mover thread (moves resumed at load wait for it); `run_swap` runs a move's final
        swap on the thread that appends to logs (the broker's event loop)."""
        self.mover.start(run_swap)

    def alter_log_dir(self, topic: str, partition: int, dest: Path) -> ErrorCode:
        """AlterReplicaLogDirs for one replica, as Kafka's ReplicaManager: a move to another dir stops;
        the dir is remembered for a replica not created yet (REPLICA_NOT_AVAILABLE, the caller tells it
        from an unknown partition); a replica elsewhere gets a future log in `dest` and the mover copies
        it there. A worker thread's job (it creates files)."""
        key = (topic, partition)
        if len(future_dir_name(topic, partition).encode()) > MAX_FILE_NAME:
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        if not self.dir_online(dest) or key in self._offline_logs:
            return ErrorCode.KAFKA_STORAGE_ERROR
        with self._alter_lock:
            future = self._futures.get(key)
            if future is not None and future.dir.parent != dest:
                log.info("Stopping the move of %s-%d to %s: now asked to go to %s", topic, partition,
                         future.dir.parent, dest)
                self._drop_future(key)
                future = None
            with self._mutex:
                current = self._logs.get(key)
                if (current is None or self._dir_of[key] != dest) and future is None:
                    self._preferred_dirs[key] = dest
            if current is None:
                return ErrorCode.REPLICA_NOT_AVAILABLE
            if future is not None or self._dir_of.get(key) == dest:
                return ErrorCode.NONE
            try:
                self._create_future(key, current, dest)
            except (OSError, StorageError) as exc:
                if isinstance(exc, OSError) and io_error_of(exc) is not None:
                    self.failures.report(dest, f"Error while creating the future log of {topic}-{partition} "
                                               f"in dir {dest}: {exc}")
                else:
                    log.error("Cannot create the future log of %s-%d in %s: %s", topic, partition, dest, exc)
                return ErrorCode.KAFKA_STORAGE_ERROR
            return ErrorCode.NONE

    def _create_future(self, key: TopicPartition, current: Log, dest: Path) -> None:
        with current.lock:
            start, hw = current.log_start_offset, current.high_watermark
            gaps = current.cleaner_checkpoint is not None
        future = Log(dest / future_dir_name(*key), current.config, log_start_offset=start, high_watermark=hw,
                     time_ms=self._time, failures=self.failures)
        if gaps or future.config.compact:  # offsets may have gaps: recovery must know (see _mark_compacted)
            future.cleaner_checkpoint = start
        with self._mutex:
            self._futures[key] = future
            self._preferred_dirs.pop(key, None)
        if future.cleaner_checkpoint is not None:
            self._write_cleaner_checkpoint(dest)
        fsync_dir(dest)
        log.info("Created the future log of %s-%d in %s, moving it from %s", key[0], key[1], dest,
                 current.dir.parent)
        self.mover.add(key, future, current)
        self.mover.start()

    def _drop_future(self, key: TopicPartition) -> None:
        """Stop a move and delete its future log."""
        self.mover.cancel(key)
        with self._mutex:
            future = self._futures.pop(key, None)
        if future is not None:
            future.delete()

    def replaced(self, key: TopicPartition, old: Log, new: Log) -> None:
        """A move's swap (storage/log_mover.py, on the thread that appends): `new`, the future log, is
        the partition's log from now on."""
        with self._mutex:
            self._logs[key] = new
            old_dir = self._dir_of[key]
            self._dir_counts[old_dir] -= 1
            self._dir_of[key] = new.dir.parent
            self._dir_counts[new.dir.parent] = self._dir_counts.get(new.dir.parent, 0) + 1
            self._futures.pop(key, None)
        for listener in self.replaced_listeners:
            listener(key[0], key[1], new)

    # --- offline log dirs --------------------------------------------------------------------

    def _dir_failed(self, d: Path) -> None:
        """The failure channel's first report of `d` (on the reporting thread, which may hold `_mutex` or a
        log's lock: neither is taken here): every log in it refuses every operation from now on."""
        dir_of = dict(self._dir_of)
        for key, lg in list(self._logs.items()):
            if dir_of.get(key) == d:
                lg.mark_offline()
        for lg in list(self._futures.values()):
            if lg.dir.parent == d:
                lg.mark_offline()

    def handle_dir_failure(self, d: Path) -> list[TopicPartition]:
        """After `d` failed (a worker thread's job, Kafka's LogManager.handleLogDirFailure): forget its logs
        and the future logs in it, stop the moves into or out of it, close their files. Returns the
        partitions whose replicas here are offline now."""
        self._dir_failed(d)  # again: a log created in it since the report
        with self._mutex:
            offline = sorted(key for key, where in self._dir_of.items() if where == d)
            closing = []
            for key in offline:
                closing.append(self._logs.pop(key))
                del self._dir_of[key]
                self._offline_logs[key] = d
            self._dir_counts.pop(d, None)
            moving = sorted(key for key, future in self._futures.items() if future.dir.parent == d or key in offline)
            futures = [self._futures.pop(key) for key in moving]
            for key in [key for key, where in self._preferred_dirs.items() if where == d]:
                del self._preferred_dirs[key]
            gone = sorted(key for key, where in self._offline_logs.items() if where == d)
        for key in moving:
            self.mover.cancel(key)
        for lg in closing:
            lg.close_files()
        for future in futures:
            if future.offline:
                future.close_files()
            else:  # in a healthy dir, moving an offline replica: kept on disk, the move resumes at start-up
                try:
                    future.close()
                except (OSError, StorageError) as exc:
                    log.warning("Closing the future log of %s-%d in %s: %s", future.topic, future.partition,
                                future.dir.parent, exc)
        log.warning("Logs for partitions %s are offline and logs for future partitions %s are offline due to "
                    "failure on log directory %s", ",".join(f"{t}-{p}" for t, p in gone) or "none",
                    ",".join(f"{t}-{p}" for t, p in moving if (t, p) not in offline) or "none", d)
        return gone

    # --- background work ---------------------------------------------------------------------

    def checkpoint(self, files: Iterable[str] = CHECKPOINT_FILES) -> None:
        """Write the checkpoint files named (by default all: recovery points with the cleaner offsets, log
        start offsets, high watermarks) in every log dir. Kafka writes each on its own interval
        (log.flush.offset.checkpoint.interval.ms, log.flush.start.offset.checkpoint.interval.ms,
        replica.high.watermark.checkpoint.interval.ms). A worker thread's job: each file is fsynced."""
        wanted = set(files)
        with self._checkpoint_lock:
            for d in self.online_dirs:
                mine = self._logs_in(d)
                try:
                    if RECOVERY_POINT_CHECKPOINT in wanted:
                        write_checkpoint(d / RECOVERY_POINT_CHECKPOINT, {key: lg.recovery_point for key, lg in mine})
                    if LOG_START_OFFSET_CHECKPOINT in wanted:
                        write_checkpoint(d / LOG_START_OFFSET_CHECKPOINT,
                                         {key: lg.log_start_offset for key, lg in mine})
                    if REPLICATION_OFFSET_CHECKPOINT in wanted:
                        write_checkpoint(d / REPLICATION_OFFSET_CHECKPOINT,
                                         {key: lg.high_watermark for key, lg in mine})
                except OSError as exc:
                    self._report(d, "writing the offset checkpoint files", exc)
                    continue
                if RECOVERY_POINT_CHECKPOINT in wanted:
                    self._write_cleaner_checkpoint_locked(d)

    def _logs_in(self, d: Path) -> list[tuple[TopicPartition, Log]]:
        # Copies taken in one step each (atomic under the GIL), not under `_mutex`: see `_checkpoint_lock`.
        # A future log is in its dir's files too (never the dir of its partition's current log).
        dir_of = dict(self._dir_of)
        mine = [(key, lg) for key, lg in list(self._logs.items()) if dir_of.get(key) == d]
        return mine + [(key, lg) for key, lg in list(self._futures.items()) if lg.dir.parent == d]

    def _write_cleaner_checkpoint(self, d: Path) -> None:
        with self._checkpoint_lock:
            self._write_cleaner_checkpoint_locked(d)

    def _write_cleaner_checkpoint_locked(self, d: Path) -> None:
        if self.failures.is_offline(d):
            return
        offsets = {key: lg.cleaner_checkpoint for key, lg in self._logs_in(d) if lg.cleaner_checkpoint is not None}
        try:
            write_checkpoint(d / CLEANER_OFFSET_CHECKPOINT, offsets)
        except OSError as exc:
            self._report(d, f"writing {CLEANER_OFFSET_CHECKPOINT}", exc)

    def _report(self, d: Path, action: str, exc: OSError) -> None:
        """An OSError met in dir `d`: if it is an I/O error, the dir goes offline; raised again otherwise."""
        if io_error_of(exc) is None:
            raise exc
        self.failures.report(d, f"Error while {action} in dir {d}: {exc}")

    def run_retention(self) -> int:
        """One retention pass over every log; returns how many segments were deleted."""
        now = self._time()
        deleted = 0
        for target in self.logs():
            try:
                deleted += run_cleanup(target, now)
            except StorageError:  # its dir failed (reported, or already offline)
                continue
            except (OSError, KafkaError):
                log.exception("Retention failed for %s", target)
        return deleted

    def run_cleaner(self) -> int:
        """One log cleaner pass: compact every compacted log that is due (a worker thread's job); then
        write cleaner-offset-checkpoint where something was cleaned. Returns how many logs were cleaned."""
        if not self.cleaner.enabled or not self._cleaner_lock.acquire(blocking=False):
            return 0
        try:
            with self._mutex:
                items = [(key, self._dir_of[key], lg) for key, lg in self._logs.items()]
            cleaned = [(key, d) for key, d, lg in items if self._clean_one(key, lg)]
            for d in {d for _, d in cleaned}:
                self._write_cleaner_checkpoint(d)
            return len(cleaned)
        finally:
            self._cleaner_lock.release()

    def _clean_one(self, key: TopicPartition, target: Log) -> bool:
        if self._cleaner_stopping or not target.config.compact or key in self._uncleanable:
            return False
        if key in self._futures:  # paused while the replica moves to another log dir, as in Kafka
            return False
        try:
            return compact(target, self._time(), self.cleaner, lambda: self._cleaner_stopping) is not None
        except CleaningAborted as exc:
            log.info("Cleaning of %s-%d stopped: %s", key[0], key[1], exc)
        except StorageError:  # its dir failed (reported, or already offline)
            pass
        except OSError as exc:
            if io_error_of(exc) is not None and not target.closed:
                d = target.dir.parent
                self.failures.report(d, f"Error while cleaning log {key[0]}-{key[1]} in dir {d}: {exc}")
            else:
                log.exception("Cleaning of %s-%d failed", key[0], key[1])
        except Exception:  # a bug or a corrupt segment: stop retrying it, as Kafka marks it uncleanable
            log.exception("Cleaning of %s-%d failed; the log is marked uncleanable", key[0], key[1])
            self._uncleanable.add(key)
        return False

    def flush_dirty(self, now_ms: int) -> int:
        """fsync logs whose flush.ms has elapsed since their last flush; returns how many. A worker
        thread's job (a log's lock is not held while its files are fsynced)."""
        flushed = 0
        for target in self.logs() + self.futures():
            if (
                target.recovery_point < target.log_end_offset
                and now_ms - target.last_flush_ms >= target.config.flush_ms
            ):
                try:
                    target.flush()
                except StorageError:  # its dir failed (reported, or already offline)
                    continue
                flushed += 1
        return flushed

    def stop_cleaning(self) -> None:
        """Make a running cleaner pass stop at its next batch, and later ones do nothing."""
        self._cleaner_stopping = True

    def shutdown(self) -> None:
        """Flush and close every log, checkpoint, then mark each dir cleanly shut down and unlock it."""
        log.info("Shutting down the log manager")
        self.stop_cleaning()
        self.mover.stop()
        with self._cleaner_lock:  # a running cleaner pass notices the flag at its next batch
            pass
        failed: set[Path] = set(self.failures.offline_dirs())
        targets = [(self._dir_of[key], lg) for key, lg in self._logs.items()]
        targets += [(lg.dir.parent, lg) for lg in self._futures.values()]
        for d, target in targets:
            try:
                target.close()
            except (OSError, StorageError) as exc:
                log.error("Error closing %s in dir %s: %s", target, d, exc)
                failed.add(d)
        self.checkpoint()
        for d in self.log_dirs:
            if d in failed or self.failures.is_offline(d):  # not all flushed: the next start-up recovers them
                continue
            marker = d / CLEAN_SHUTDOWN_FILE
            try:
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o644))
                fsync_dir(d)
            except OSError as exc:
                log.error("Could not mark %s cleanly shut down (its logs will be recovered at start-up): %s", d, exc)
        for fd in self._lock_fds.values():
            os.close(fd)
        self._lock_fds.clear()
        log.info("Shutdown complete.")
