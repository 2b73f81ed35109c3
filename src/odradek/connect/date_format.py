"""Java `SimpleDateFormat` patterns as Kafka's TimestampConverter and TimestampRouter take them (`format`,
`timestamp.format`), always in UTC: the common pattern letters (G y Y M L d D E u a H k K h m s S z Z X) and
quoted literals ('T', '' for a quote), formatting a millisecond timestamp and parsing a string back to one.
Letters outside that set are a configuration error, as an illegal letter is in Java."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LETTERS = set("GyYMLdDEuaHkKhmsSzZX")
_MONTHS = list(calendar.month_name)[1:]
_DAYS = list(calendar.day_name)  # Monday first, as datetime.weekday()


class PatternError(ValueError):
    """The pattern is not one SimpleDateFormat accepts."""


@dataclass(frozen=True, slots=True)
class _Token:
    letter: str  # "" for a literal
    count: int
    text: str = ""


def _tokenize(pattern: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            if pattern[i + 1:i + 2] == "'":
                tokens.append(_Token("", 0, "'"))
                i += 2
                continue
            end = i + 1
            text = ""
            while True:
                nxt = pattern.find("'", end)
                if nxt < 0:
                    raise PatternError("Unterminated quote")
                text += pattern[end:nxt]
                if pattern[nxt + 1:nxt + 2] == "'":
                    text += "'"
                    end = nxt + 2
                    continue
                i = nxt + 1
                break
            tokens.append(_Token("", 0, text))
        elif c.isascii() and c.isalpha():
            if c not in _LETTERS:
                raise PatternError(f"Illegal pattern character '{c}'")
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            tokens.append(_Token(c, j - i))
            i = j
        else:
            tokens.append(_Token("", 0, c))
            i += 1
    return tokens


class DateFormat:
    """One compiled pattern, UTC."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        self._regex = re.compile("".join(self._part(t) for t in self._tokens), re.IGNORECASE)

    # ---- formatting ----

    def format(self, millis: int) -> str:
        moment = _EPOCH + dt.timedelta(milliseconds=millis)
        return "".join(t.text if not t.letter else self._field(t, moment) for t in self._tokens)

    @staticmethod
    def _field(t: _Token, m: dt.datetime) -> str:
        n, c = t.count, t.letter
        if c == "G":
            return "AD" if m.year > 0 else "BC"
        if c in "yY":
            return f"{m.year % 100:02d}" if n == 2 else f"{m.year:0{n}d}"
        if c in "ML":
            if n >= 4:
                return _MONTHS[m.month - 1]
            return _MONTHS[m.month - 1][:3] if n == 3 else f"{m.month:0{n}d}"
        if c == "E":
            return _DAYS[m.weekday()] if n >= 4 else _DAYS[m.weekday()][:3]
        if c == "z":
            return "Coordinated Universal Time" if n >= 4 else "UTC"
        if c == "Z":
            return "+0000"
        if c == "X":
            return "Z"
        if c == "a":
            return "AM" if m.hour < 12 else "PM"
        number = {"d": m.day, "D": m.timetuple().tm_yday, "u": m.isoweekday(), "H": m.hour, "k": m.hour or 24,
                  "K": m.hour % 12, "h": m.hour % 12 or 12, "m": m.minute, "s": m.second,
                  "S": m.microsecond // 1000}[c]
        return f"{number:0{n}d}"

    # ---- parsing ----

    @staticmethod
    def _part(t: _Token) -> str:
        if not t.letter:
            return re.escape(t.text)
        c, n = t.letter, t.count
        group = f"(?P<{c}{id(t)}>"
        if c == "G":
            return group + "AD|BC)"
        if c in "ML" and n >= 3:
            return group + "[A-Za-z]+)"
        if c == "E":
            return group + "[A-Za-z]+)"
        if c == "a":
            return group + "AM|PM)"
        if c == "z":
            return group + "[A-Za-z ]+?|[+-]\\d{2}:?\\d{2})"
        if c in "ZX":
            return group + "Z|[+-]\\d{2}(?::?\\d{2})?)"
        return group + ("\\d{%d}" % n if n > 1 and c not in "yY" else "-?\\d+") + ")"  # noqa: UP031

    def parse(self, text: str) -> int:
        """Milliseconds since the epoch; ValueError when the text does not match."""
        match = self._regex.fullmatch(text.strip())
        if match is None:
            raise ValueError(f'Unparseable date: "{text}"')
        year, month, day, hour, minute, second, millis, offset = 1970, 1, 1, 0, 0, 0, 0, 0
        pm: bool | None = None
        yday: int | None = None
        for t in self._tokens:
            if not t.letter:
                continue
            raw = match.group(f"{t.letter}{id(t)}")
            c = t.letter
            if c in "yY":
                year = int(raw)
                if t.count <= 2 and len(raw) <= 2:
                    year += 2000 if year < 80 else 1900
            elif c in "ML":
                if t.count >= 3:
                    names = [m.lower()[:len(raw)] if t.count == 3 else m.lower() for m in _MONTHS]
                    if raw.lower() not in names:
                        raise ValueError(f'Unparseable date: "{text}"')
                    month = names.index(raw.lower()) + 1
                else:
                    month = int(raw)
            elif c == "d":
                day = int(raw)
            elif c == "D":
                yday = int(raw)
            elif c in "Hk":
                hour = int(raw) % 24
            elif c in "Kh":
                hour = int(raw) % 12
            elif c == "a":
                pm = raw.upper() == "PM"
            elif c == "m":
                minute = int(raw)
            elif c == "s":
                second = int(raw)
            elif c == "S":
                millis = int(raw)  # SimpleDateFormat reads the digits as a count of milliseconds
            elif c in "ZXz" and raw.upper() not in ("Z", "UTC", "GMT") and raw[0] in "+-":
                digits = raw[1:].replace(":", "")
                offset = (int(digits[:2]) * 60 + int(digits[2:4] or 0)) * (-1 if raw[0] == "-" else 1)
        if pm is not None:
            hour = hour % 12 + (12 if pm else 0)
        try:
            base = dt.datetime(year, month, day, tzinfo=dt.UTC) if yday is None else \
                dt.datetime(year, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=yday - 1)
        except ValueError:
            raise ValueError(f'Unparseable date: "{text}"') from None
        moment = base + dt.timedelta(hours=hour, minutes=minute - offset, seconds=second, milliseconds=millis)
        return (moment - _EPOCH) // dt.timedelta(milliseconds=1)
