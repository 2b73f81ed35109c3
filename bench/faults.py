"""Long seeded fault schedules (issue #29): for each seed a fresh three-broker cluster on its own simulated
network (tests/faults/), the workloads of tests/faults/run.py, and faults drawn from every nemesis with
that seed until the schedule's minutes are spent; then healing, the final reads and the checker. Prints
each fault as it happens, a summary per schedule, and at the end a Markdown table of all of them (the
README's "Faults" table). Exits 1 if any schedule lost, duplicated, reordered or tore anything. Needs
root (network namespaces).

    python bench/faults.py                          # 10 schedules of 10 minutes, seeds 1..10
    python bench/faults.py --seeds 3 --minutes 2    # a quick look
    python bench/faults.py --seed-base 100 --nemeses pause-broker,kill
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.faults.checker import Report  # noqa: E402
from tests.faults.cluster import FaultCluster  # noqa: E402
from tests.faults.nemesis import NEMESES  # noqa: E402
from tests.faults.netns import unavailable_reason  # noqa: E402
from tests.faults.run import Schedule, run  # noqa: E402


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(f"faults: stopped by signal {signum}")  # runs the finally blocks: clusters and namespaces go


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=10, help="how many schedules (default 10)")
    p.add_argument("--seed-base", type=int, default=1, help="the first seed (default 1)")
    p.add_argument("--minutes", type=float, default=10.0, help="faults for this long per schedule (default 10)")
    p.add_argument("--fault-seconds", type=float, default=10.0, help="how long each fault lasts (default 10)")
    p.add_argument("--calm-seconds", type=float, default=5.0, help="healthy time after each healing (default 5)")
    p.add_argument("--nemeses", default=",".join(sorted(NEMESES)),
                   help=f"comma-separated, from: {', '.join(sorted(NEMESES))}")
    p.add_argument("--tmpfs-mb", type=int, default=512,
                   help="each broker's log dir on a tmpfs of this size, for fill-disk (default 512)")
    p.add_argument("--dir", type=Path, help="keep each run's history here (default: a temp dir)")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.nemeses.split(",") if n.strip()]
    unknown = [n for n in names if n not in NEMESES]
    if unknown:
        p.error(f"unknown nemeses: {', '.join(unknown)}")
    reason = unavailable_reason()
    if reason is not None:
        print(f"faults: cannot run: {reason}", file=sys.stderr)
        return 2
    root = args.dir or Path(tempfile.mkdtemp(prefix="odradek-faults-"))
    rows = []
    failed = False
    per_fault = args.fault_seconds + args.calm_seconds + 3  # + the wait for the ISR after healing
    for seed in range(args.seed_base, args.seed_base + args.seeds):
        rng = Random(seed)
        count = max(1, int(args.minutes * 60 // per_fault))
        chosen = [rng.choice(names) for _ in range(count)]
        schedule = Schedule(chosen, seed, fault_s=args.fault_seconds, calm_s=args.calm_seconds, tag=f"s{seed}",
                            echo=True)
        directory = root / f"seed-{seed}"
        started = time.monotonic()
        print(f"== schedule {seed}: {count} faults, history in {directory}", flush=True)
        cluster = FaultCluster(directory / "cluster", tmpfs_mb=args.tmpfs_mb)
        try:
            cluster.start()
            report = run(cluster, directory, schedule)
            if not report.ok:
                cluster.keep_data(directory)
        except AssertionError as exc:  # the cluster did not heal: a failure of this schedule, the next one runs
            report = Report()
            report.violations.append(f"did not heal: {str(exc).strip().splitlines()[-1]} (stacks in the brokers' "
                                     f"logs under {directory / 'cluster'})")
            report.lost.append("?")
        finally:
            cluster.close()
        minutes = (time.monotonic() - started) / 60
        print(f"== schedule {seed}: {'ok' if report.ok else 'FAILED'} in {minutes:.1f} min: {report.summary()}",
              flush=True)
        for line in report.violations + report.notes:
            print(f"   {line}", flush=True)
        failed |= not report.ok
        kinds = ", ".join(f"{n} x{chosen.count(n)}" for n in sorted(set(chosen)))
        rows.append(f"| {seed} | {kinds} | {minutes:.1f} | {report.acknowledged} | {len(report.lost)} | "
                    f"{len(report.duplicated)} | {len(report.resent)} | {len(report.out_of_order)} | "
                    f"{report.transactions.get('commit', 0)}/{report.transactions.get('abort', 0)} | "
                    f"{len(report.torn_transactions)} | {len(report.offsets_backward)} |")
    print("\n| seed | faults | minutes | acknowledged | lost | duplicated | re-sent by the client | out of order | "
          "transactions committed/aborted | torn | offsets backward |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
