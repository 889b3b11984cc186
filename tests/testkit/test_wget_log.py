"""The `wget --no-verbose` log kept in generated WARC files, numbers formatted as wget does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from archive_testkit.wget_log import (
    LoggedDownload,
    human_readable,
    no_verbose_log,
    parse_no_verbose_log,
    print_decimal,
    retr_rate,
)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.0000162, "0"),
        (0.0007, "0"),
        (0.02, "0.02"),
        (0.3, "0.3"),
        (1.04, "1.0"),
        (9.94, "9.9"),
        (12.4, "12"),
    ],
)
def test_print_decimal(seconds: float, shown: str) -> None:
    assert print_decimal(seconds) == shown


@pytest.mark.unit
@pytest.mark.parametrize(
    ("size", "shown"),
    [(0, "0"), (161, "161"), (1023, "1023"), (2360, "2.3K"), (46_080, "45K"), (3_250_586, "3.1M")],
)
def test_human_readable(size: int, shown: str) -> None:
    assert human_readable(size) == shown


@pytest.mark.unit
@pytest.mark.parametrize(
    ("per_second", "shown"),
    [(512.0, "512 B/s"), (10_454_384.0, "9.97 MB/s"), (20_480.0, "20.0 KB/s"), (1024.0 * 150, "150 KB/s")],
)
def test_retr_rate(per_second: float, shown: str) -> None:
    assert retr_rate(per_second) == shown


@pytest.mark.unit
def test_the_log_lists_each_saved_file_then_the_totals() -> None:
    started = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    downloads = [
        LoggedDownload("https://example.com/", 134, "example.com/index.html", started),
        LoggedDownload("https://example.com/a.css", 15, "example.com/a.css", started + timedelta(seconds=1)),
    ]
    log = no_verbose_log(downloads, started=started, finished=started + timedelta(seconds=2))
    assert log.decode().splitlines() == [
        '2023-11-14 22:13:20 URL:https://example.com/ [134/134] -> "example.com/index.html" [1]',
        '2023-11-14 22:13:21 URL:https://example.com/a.css [15/15] -> "example.com/a.css" [1]',
        "FINISHED --2023-11-14 22:13:22--",
        "Total wall clock time: 2.0s",
        "Downloaded: 2 files, 149 in 1.6s (93.1 B/s)",  # transfers took 80% of the run
    ]


@pytest.mark.unit
def test_parsing_a_log_gives_back_its_saved_files_and_skips_errors() -> None:
    started = datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    downloads = [
        LoggedDownload("http://site0000.test/", 3851, "files/site0000.test/index.html", started),
        LoggedDownload("http://site0000.test/a%20b.png", 74, "files/site0000.test/a b.png", started),
    ]
    log = no_verbose_log(downloads, started=started, finished=started + timedelta(seconds=1))
    errors = (b"http://site0000.test/missing.png:\n2023-11-14 22:13:20 ERROR 404: Not Found.\n"
              b'2023-11-14 22:13:21 URL:http://site0000.test/chunked [512] -> "files/chunked" [1]\n')
    parsed = parse_no_verbose_log(errors + log)
    assert parsed[1:] == downloads
    assert parsed[0] == LoggedDownload("http://site0000.test/chunked", 512, "files/chunked",
                                       started + timedelta(seconds=1))
