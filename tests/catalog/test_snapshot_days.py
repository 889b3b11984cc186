"""The days with snapshots (the day partitions) on SQLite and PostgreSQL, in UTC."""

from datetime import UTC, datetime, timedelta, timezone

from archive_pipelines.catalog import Catalog


def test_each_utc_day_with_snapshots_once_oldest_first(catalog: Catalog) -> None:
    assert _days(catalog) == []
    plus_two = timezone(timedelta(hours=2))
    moments = [
        datetime(2024, 12, 25, 23, 59, 59, 999_000, tzinfo=UTC),
        datetime(1996, 5, 10, 8, 0, tzinfo=UTC),  # the first web archives
        datetime(2024, 12, 25, 0, 0, tzinfo=UTC),
        datetime(2024, 12, 26, 1, 0, tzinfo=plus_two),  # 2024-12-25 23:00 UTC
        datetime(2024, 12, 26, 0, 0, tzinfo=UTC),
    ]
    for n, moment in enumerate(moments):
        catalog.snapshots.add_snapshot(url=f"https://a.test/{n}", timestamp=f"{moment.timestamp()}.{n}",
                             created_at=moment)
    assert _days(catalog) == ["1996-05-10", "2024-12-25", "2024-12-26"]


def _days(catalog: Catalog) -> list[str]:
    with catalog.transaction() as tx:
        return tx.days.snapshot_days()
