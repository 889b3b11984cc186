"""Frontier microbenchmarks: add and claim throughput, from one process or several.

`python -m archive_testkit.frontier_bench.microbench --redis-url URL` is what
bench/crawl_bench.py runs.
"""
