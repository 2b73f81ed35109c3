"""How many examples the fuzz tests run.

By default each hypothesis test runs a modest, derandomized number of examples per API version, so CI is
quick and repeatable. ODRADEK_FUZZ_EXAMPLES=N raises the count and draws fresh random examples each run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

EXAMPLES_ENV = "ODRADEK_FUZZ_EXAMPLES"
EXAMPLES = int(os.environ.get(EXAMPLES_ENV, "25"))


def fuzz_settings(share: float = 1.0, shrink: bool = True) -> settings:
    """Settings for one test; `share` scales the example count for costly tests (at least 5 examples).
    `shrink=False` reports the first failing example as found: for tests known to fail (xfail), where
    shrinking would only cost time."""
    phases = tuple(settings.default.phases) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    return settings(
        phases=phases,
        max_examples=max(5, int(EXAMPLES * share)),
        derandomize=EXAMPLES_ENV not in os.environ,
        database=None,  # no .hypothesis directory in the work tree
        deadline=None,  # decoding time is checked by the slow-input tests, not per example
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
