"""Test, benchmark and demo kits, kept out of the product.

`archivebox` writes realistic ArchiveBox collections (`generate_collection(root, layout,
snapshots=N)` with the `Aged07` or `ReleaseMix` layout), their WARC files through `warc_files`
(as `wget --warc-file` writes them; `warc_reading` reads them back with digests checked);
`manifest` and `links` check them; `testweb` serves a deterministic web for the crawler;
`servers` starts throwaway PostgreSQL and moto_server (S3); `frontier_bench` and `blob_rows`
feed the benchmarks.

The kit may import the product; `archive_pipelines` and `frontier_service` never import the
kit (an import-linter contract in pyproject.toml). Tests, bench/ and scripts/demo.py use it.
"""
