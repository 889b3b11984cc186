"""A data dir whose primary store is an S3 bucket (moto_server): its archive.toml and settings."""

from __future__ import annotations

from pathlib import Path

from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings, load_settings


def s3_primary_toml(*, endpoint_url: str, bucket: str, prefix: str = "archive",
                    catalog_url: str = "", extra: str = "") -> str:
    """archive.toml of a deployment with its primary in `bucket` (no symlink views)."""
    catalog = f'[catalog]\nurl = "{catalog_url}"\n\n' if catalog_url else ""
    return (f'{catalog}[[stores]]\nname = "primary"\nkind = "s3"\nbucket = "{bucket}"\n'
            f'prefix = "{prefix}"\nendpoint_url = "{endpoint_url}"\ncodec = "raw"\n\n{extra}')


def s3_primary_data_dir(data_dir: Path, *, endpoint_url: str, bucket: str,
                        prefix: str = "archive", catalog_url: str = "",
                        extra: str = "") -> Settings:
    """Write the archive.toml into `data_dir` (made if absent), initialize it, and return its
    settings as `load_settings` reads them (no environment overrides)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "archive.toml").write_text(s3_primary_toml(
        endpoint_url=endpoint_url, bucket=bucket, prefix=prefix, catalog_url=catalog_url,
        extra=extra))
    settings = load_settings(data_dir, environ={})
    initialize(settings)
    return settings
