"""Crawls of the test web onto a data dir whose primary is an S3 bucket, and what the bucket
holds of them (segments under `<prefix>/sessions/`, bodies under `<prefix>/sha256/`)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3

from archive_pipelines.settings import Settings
from archive_testkit.testweb import TestWeb
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.web import SEEDS, crawler_settings

CLI = [sys.executable, "-m", "archive_pipelines.cli.main"]
ROOT = Path(__file__).resolve().parents[2]


def crawl_onto(settings: Settings, web: TestWeb, redis_url: str, crawl_name: str,
               **changes: Any) -> RunReport:
    """Crawl two seeds of the test web, one link deep, into `settings`' data dir and its
    primary store (segments of 10 pages)."""
    crawler = crawler_settings(settings.data_dir, redis_url, crawl_name, web.port,
                               max_depth=1, segment_pages=10, **changes)
    service = CrawlerService(crawler, seeds=SEEDS[:2], store_settings=settings.primary_store)
    return asyncio.run(service.run())


def bucket_keys(endpoint_url: str, bucket: str, prefix: str) -> list[str]:
    """Every key under `prefix/` in the bucket."""
    client = boto3.client("s3", endpoint_url=endpoint_url, region_name="us-east-1")
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                  Prefix=f"{prefix}/"):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return keys


def segment_keys(endpoint_url: str, bucket: str, prefix: str = "archive") -> list[str]:
    """The crawl segment objects (not the compacted files), as data-dir relative names."""
    return sorted(key.removeprefix(f"{prefix}/") for key in bucket_keys(endpoint_url, bucket, prefix)
                  if key.endswith(".jsonl") and "/sessions/compacted/" not in key)


def local_segments(data_dir: Path) -> list[Path]:
    return sorted(p for p in data_dir.glob("sessions/*/*/*.jsonl") if not p.name.startswith("."))


def run_cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI on `data_dir` (the S3 credentials of the environment pass through)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR", "REDIS_URL")}
    return subprocess.run([*CLI, "--data-dir", str(data_dir), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)
