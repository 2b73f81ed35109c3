"""What the source does when records it should read are gone: fail (failOnDataLoss=true) or warn and skip."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from odradek.spark.offsets import Discontinuity

log = logging.getLogger("odradek.spark")

ADVICE = ("Some data may have been lost because it is no longer available in the topic: it was deleted by "
          "retention or DeleteRecords, or the topic or partition was deleted or recreated before all of it "
          "was processed. If you want the query to go on in such cases, set the source option "
          "failOnDataLoss to false.")
SKIP_NOTE = "Skipping, as failOnDataLoss is false."


class DataLossError(RuntimeError):
    """Records between the offsets named in the message could not be read."""


def report_data_loss(message: str, fail: bool) -> None:
    """Raise DataLossError with `message` (and how to go on) if `fail`, else log it as a warning."""
    if fail:
        raise DataLossError(f"{message}. {ADVICE}")
    log.warning("%s. %s", message, SKIP_NOTE)


def report_discontinuities(problems: Iterable[Discontinuity], fail: bool) -> None:
    """report_data_loss for each offset discontinuity found by planning."""
    for problem in problems:
        report_data_loss(problem.message(), fail)
