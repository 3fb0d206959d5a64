"""Quartz cron schedules, as Hive 4's metastore reads them: which are valid, and when one fires
next.

A scheduled query's ``schedule`` (``CREATE SCHEDULED QUERY ... CRON '0 */10 * * * ? *'``) is a
Quartz cron expression; the stock HMS 4.0.1 parses it with cron-utils' ``QUARTZ`` definition
and takes the first time it fires strictly after now, in the server's time zone. The fields,
separated by blanks:

==============  ========  ==================================================================
field           values    besides ``*``, ``n``, ``a-b``, ``x/step`` (x: ``*``, ``n``, ``a-b``)
                          and lists of those (``a,b``)
==============  ========  ==================================================================
seconds         0-59
minutes         0-59
hours           0-23
day of month    1-31      ``?`` (not given), ``L`` (the last day), ``L-n`` (n days before it),
                          ``nW`` (the weekday nearest day n, in its month), ``LW`` (the last
                          weekday)
month           1-12      JAN-DEC
day of week     1-7       SUN-SAT (1 is Sunday); ``?``, ``nL`` (the month's last such day),
                          ``n#k`` (its k-th such day)
year, optional  1970-2099
==============  ========  ==================================================================

Exactly one of the two day fields is ``?``. Anything else is invalid (:class:`InvalidSchedule`,
which the metastore answers as ``InvalidInputException``). A schedule that never fires again
(a year past) has no next time (``None``). Checked against cron-utils 9.1.6, the stock's, by
``tests/hms/test_quartz.py``.
"""
from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass

MONTHS = {name: i + 1 for i, name in enumerate(
    "JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
DAYS = {name: i + 1 for i, name in enumerate("SUN MON TUE WED THU FRI SAT".split())}
MIN_YEAR, MAX_YEAR = 1970, 2099


class InvalidSchedule(ValueError):
    """The schedule is not a Quartz cron expression the metastore accepts."""


class ScheduleError(RuntimeError):
    """A valid schedule that cron-utils fails to evaluate (``31W`` met in a shorter month): the
    stock answers an internal error."""


@dataclass(frozen=True)
class _Field:
    low: int
    high: int
    names: dict[str, int] | None = None


_FIELDS = (_Field(0, 59), _Field(0, 59), _Field(0, 23), _Field(1, 31), _Field(1, 12, MONTHS),
           _Field(1, 7, DAYS), _Field(MIN_YEAR, MAX_YEAR))
_DOM, _DOW = 3, 5


def _number(text: str, field: _Field) -> int:
    if field.names is not None and text.upper() in field.names:
        return field.names[text.upper()]
    if not text.isdigit():
        raise InvalidSchedule(f"invalid value {text!r}")
    value = int(text)
    if not field.low <= value <= field.high:
        raise InvalidSchedule(f"{value} is out of {field.low}-{field.high}")
    return value


def _values(item: str, field: _Field) -> set[int]:
    """The values of one item of a list: ``*``, ``n``, ``a-b``, each with an optional step (at
    most the field's highest value; the year's, at most its number of values). A range may
    wrap, without a step: the day of week's wraps (``FRI-MON``: Friday to Monday), but in
    the other fields cron-utils fires on its first value only (``22-2``: at 22), and so this;
    a year range never wraps."""
    base, slash, step_text = item.partition("/")
    step = 1
    if slash:
        limit = field.high - field.low + 1 if field.low == MIN_YEAR else field.high
        if not step_text.isdigit() or not 1 <= int(step_text) <= limit:
            raise InvalidSchedule(f"invalid step {step_text!r}")
        step = int(step_text)
    if base == "*":
        return set(range(field.low, field.high + 1, step))
    if "-" in base:
        a, _, b = base.partition("-")
        low, high = _number(a, field), _number(b, field)
        if low > high:
            if slash or field.low == MIN_YEAR:
                raise InvalidSchedule(f"invalid range {base!r}")
            if field is _FIELDS[_DOW]:
                return set(range(low, field.high + 1)) | set(range(field.low, high + 1))
            return {low}
        return set(range(low, high + 1, step))
    low = _number(base, field)
    return set(range(low, field.high + 1, step)) if slash else {low}


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: the allowed values of each field, and the day rules."""

    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: tuple[int, ...]
    years: tuple[int, ...] | None  # None: any
    days_of_month: frozenset[int] | None  # None: the day of week decides
    dom_specials: tuple[str, ...]  # "L", "L-n", "nW", "LW"
    days_of_week: frozenset[int] | None
    dow_specials: tuple[tuple[int, str, int], ...]  # (day, "L" | "#", k)

    def days(self, year: int, month: int) -> list[int]:
        """The days of ``month`` the schedule fires on, in order."""
        first_weekday, ndays = calendar.monthrange(year, month)

        def dow(day: int) -> int:  # 1 = Sunday .. 7 = Saturday
            return (first_weekday + day - 1 + 1) % 7 + 1

        out: set[int] = set()
        if self.days_of_month is not None:
            out |= {d for d in self.days_of_month if d <= ndays}
            for special in self.dom_specials:
                if special == "L":
                    out.add(ndays)
                elif special.startswith("L-"):
                    day = ndays - int(special[2:])
                    if day >= 1:
                        out.add(day)
                elif special == "LW":
                    day = ndays
                    while dow(day) in (1, 7):
                        day -= 1
                    out.add(day)
                else:  # nW
                    day = int(special[:-1])
                    if day > ndays:  # cron-utils' DateTimeException: the stock fails
                        raise ScheduleError(f"no day {day} in {year}-{month:02d}")
                    out.add(_nearest_weekday(day, ndays, dow))
        else:
            out |= {d for d in range(1, ndays + 1) if dow(d) in (self.days_of_week or ())}
            for weekday, kind, k in self.dow_specials:
                matching = [d for d in range(1, ndays + 1) if dow(d) == weekday]
                if kind == "L":
                    out.add(matching[-1])
                elif k <= len(matching):
                    out.add(matching[k - 1])
        return sorted(out)

    def next_after(self, epoch: int) -> int | None:
        """The first time (epoch seconds) the schedule fires strictly after ``epoch``, in the
        server's local time; None when it never fires again."""
        start = time.localtime(epoch + 1)
        floor = (start.tm_year, start.tm_mon, start.tm_mday, start.tm_hour, start.tm_min,
                 start.tm_sec)
        years = self.years if self.years is not None else range(floor[0], MAX_YEAR + 1)
        for year in years:
            if year < floor[0]:
                continue
            y_bound = year == floor[0]
            for month in self.months:
                if y_bound and month < floor[1]:
                    continue
                m_bound = y_bound and month == floor[1]
                for day in self.days(year, month):
                    if m_bound and day < floor[2]:
                        continue
                    d_bound = m_bound and day == floor[2]
                    for hour in self.hours:
                        if d_bound and hour < floor[3]:
                            continue
                        h_bound = d_bound and hour == floor[3]
                        for minute in self.minutes:
                            if h_bound and minute < floor[4]:
                                continue
                            mi_bound = h_bound and minute == floor[4]
                            for second in self.seconds:
                                if mi_bound and second < floor[5]:
                                    continue
                                return int(time.mktime(
                                    (year, month, day, hour, minute, second, 0, 0, -1)))
        return None


def _nearest_weekday(day: int, ndays: int, dow) -> int:
    """Quartz's ``nW``: day n if a weekday, else the nearest weekday of the same month."""
    weekday = dow(day)
    if weekday == 7:  # Saturday: the Friday before, or the Monday after on the 1st
        return day - 1 if day > 1 else day + 2
    if weekday == 1:  # Sunday: the Monday after; on the last day cron-utils keeps the Sunday
        return day + 1 if day < ndays else day
    return day


_DOM_SPECIAL = re.compile(r"^(L|L-\d+|\d+W|LW)$")
_DOW_SPECIAL = re.compile(r"^([0-9A-Za-z]+)(L|#(\d+))$")


def parse(expression: str | None) -> Schedule:
    """The schedule of a Quartz cron expression; :class:`InvalidSchedule` if it is not one."""
    if expression is None:
        raise InvalidSchedule("no schedule")
    parts = expression.split()
    if len(parts) not in (6, 7):
        raise InvalidSchedule(f"{len(parts)} fields where 6 or 7 are expected")
    dom_text, dow_text = parts[_DOM], parts[_DOW]
    if (dom_text == "?") == (dow_text == "?"):
        raise InvalidSchedule("exactly one of day-of-month and day-of-week must be '?'")
    plain: list[tuple[int, ...] | None] = []
    for index, text in enumerate(parts):
        if index in (_DOM, _DOW):
            plain.append(None)
            continue
        if text == "?":
            raise InvalidSchedule("'?' is for the day fields only")
        plain.append(tuple(sorted(_list(text, _FIELDS[index]))))
    dom_days, dom_specials = _days_of_month(dom_text)
    dow_days, dow_specials = _days_of_week(dow_text)
    years = plain[6] if len(parts) == 7 else None
    return Schedule(seconds=plain[0], minutes=plain[1], hours=plain[2], months=plain[4],
                    years=years, days_of_month=dom_days, dom_specials=dom_specials,
                    days_of_week=dow_days, dow_specials=dow_specials)


def _list(text: str, field: _Field) -> set[int]:
    out: set[int] = set()
    for item in text.split(","):
        if not item:
            raise InvalidSchedule(f"empty item in {text!r}")
        out |= _values(item, field)
    return out


def _days_of_month(text: str):
    """The plain days and the special ones (``L``, ``L-n``, ``nW``, ``LW``). In a list of more
    than one item, cron-utils reads ``nW`` as day n and drops the ``L`` forms: so here."""
    if text == "?":
        return None, ()
    items = text.split(",")
    days: set[int] = set()
    specials = []
    for item in items:
        if not item:
            raise InvalidSchedule(f"empty item in {text!r}")
        if not _DOM_SPECIAL.match(item):
            days |= _values(item, _FIELDS[_DOM])
            continue
        if item.endswith("W") and item != "LW":
            day = _number(item[:-1], _FIELDS[_DOM])
            if len(items) > 1:
                days.add(day)
                continue
        elif item.startswith("L-") and not 1 <= int(item[2:]) <= 31:
            raise InvalidSchedule(f"invalid offset {item!r}")
        if len(items) == 1:
            specials.append(item)
    return frozenset(days), tuple(specials)


def _days_of_week(text: str):
    if text == "?":
        return None, ()
    days: set[int] = set()
    specials = []
    for item in text.split(","):
        match = _DOW_SPECIAL.match(item)
        if item == "L":
            days.add(7)
        elif match:
            weekday = _number(match.group(1), _FIELDS[_DOW])
            if match.group(2) == "L":
                specials.append((weekday, "L", 0))
            else:
                k = int(match.group(3))
                if not 1 <= k <= 7:  # cron-utils takes 6 and 7 (never met)
                    raise InvalidSchedule(f"invalid occurrence {item!r}")
                specials.append((weekday, "#", k))
        elif not item:
            raise InvalidSchedule(f"empty item in {text!r}")
        else:
            days |= _values(item, _FIELDS[_DOW])
    return frozenset(days), tuple(specials)


def next_execution(expression: str | None, epoch: int) -> int | None:
    """When ``expression`` fires next, strictly after ``epoch`` (see :meth:`Schedule.next_after`)."""
    return parse(expression).next_after(epoch)
