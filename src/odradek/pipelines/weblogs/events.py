"""One web access event and its log line: nginx's "combined" format followed by the request time.

    203.0.113.7 - - [21/Nov/2026:12:30:05 +0000] "GET /products/42 HTTP/1.1" 200 5123 "https://www.google.com/" "Mozilla/5.0 (...)" 0.087

The last field is the request time in seconds with millisecond resolution (nginx's $request_time).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def clf_time(ts_ms: int) -> str:
    """Common Log Format time of a UTC epoch-ms instant: 21/Nov/2026:12:30:05 +0000 (seconds resolution)."""
    t = time.gmtime(ts_ms // 1000)
    return f"{t.tm_mday:02d}/{MONTHS[t.tm_mon - 1]}/{t.tm_year:04d}:{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} +0000"


@dataclass(frozen=True)
class AccessEvent:
    """One request as the web server logged it."""

    ts_ms: int
    ip: str
    method: str
    path: str
    status: int
    bytes: int
    latency_ms: int
    user_agent: str
    referrer: str

    @property
    def logged_ts_ms(self) -> int:
        """The time the line carries: the log format has whole seconds."""
        return self.ts_ms // 1000 * 1000

    def to_line(self) -> str:
        return (f'{self.ip} - - [{clf_time(self.ts_ms)}] "{self.method} {self.path} HTTP/1.1" {self.status} '
                f'{self.bytes} "{self.referrer}" "{self.user_agent}" {self.latency_ms // 1000}.{self.latency_ms % 1000:03d}')
