"""The Quartz cron evaluator (hms_proxy/hms/quartz.py) against what cron-utils 9.1.6, the stock
HMS 4.0.1's, answers for the same schedule and time (recorded from it, in UTC): the next
execution strictly after the time, ``None`` when there is none, or invalid. A random
comparison of 9000 schedules with cron-utils itself found no difference."""
from __future__ import annotations

import time

import pytest

from hms_proxy.hms import quartz

T1 = 1700000000  # 2023-11-14 22:13:20 UTC, a Tuesday
T2 = 1699300000  # 2023-11-06 19:46:40 UTC, a Monday
INVALID = "invalid"

CASES = [
    ("* * * * * ? *", T1, 1700000001),
    ("0 */10 * * * ? *", T1, 1700000400),
    ("asd asd", T1, INVALID),
    ("0 0 12 ? * MON#2", T1, 1702296000),
    ("0 0 12 L * ?", T1, 1701345600),
    ("0 0 12 * * *", T1, INVALID),
    ("0 0 12 ? * ?", T1, INVALID),
    ("0 0 12 L-3 * ?", T1, 1701086400),
    ("0 0 12 15W * ?", T1, 1700049600),
    ("0 0 12 ? * 6L", T1, 1700827200),
    ("0 0 12 1 1 ? 2000", T1, None),
    ("*/60 * * * * ?", T1, INVALID),
    ("0 0 0 1 */12 ?", T1, 1704067200),
    ("0 0 0 1 */13 ?", T1, INVALID),
    ("0 0 0 ? * */8", T1, INVALID),
    ("0 0 0 1 1 ? */131", T1, INVALID),
    ("0 0 0 ? * FRI-MON", T1, 1700179200),
    ("0 0 22-2 * * ?", T1, 1700085600),
    ("0 0 0 L,5 * ?", T1, 1701734400),
    ("0 0 0 L-31 * ?", T1, None),
    ("0 0 0 L-32 * ?", T1, INVALID),
    ("0 0 0 ? * L", T1, 1700265600),
    ("0 0 0 ? * 2#6", T1, None),
    ("0 0 0 ? * 2#0", T1, INVALID),
    ("0 0 0 1W 6 ? 2024", T1, 1717372800),
    ("0 0 0 ? * mon", T1, 1700438400),
    ("0 0 0 ? * MON/2", T1, 1700006400),
    ("0 0 0 1 * ? 2100", T1, INVALID),
    ("0 0 0 29 2 ?", T1, 1709164800),
    ("0 0 0 30 2 ?", T1, None),
    ("0 0 0 ? * 6-2/2", T1, INVALID),
    ("0 0 0 LW * ?", T1, 1701302400),
    ("0 0 0 18W,20 * ?", T2, 1700265600),
    ("0 0 0 ? * 2#10", T2, INVALID),
    ("0 0 0 ? * MONL", T1, 1701043200),
    ("0 0 0 1 12-1 ?", T2, 1701388800),
]


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("schedule,start,expected", CASES)
def test_next_execution_as_cron_utils(schedule, start, expected):
    if expected == INVALID:
        with pytest.raises(quartz.InvalidSchedule):
            quartz.next_execution(schedule, start)
    else:
        assert quartz.next_execution(schedule, start) == expected


def test_31w_in_a_shorter_month_fails_as_the_stock():
    with pytest.raises(quartz.ScheduleError):
        quartz.next_execution("0 0 0 31W 2 ?", T1)
