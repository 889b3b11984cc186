"""`crawl_segments`: declared here, materialized by the frontier service as it runs."""

from frontier_service.archiving.events import crawl_segments_spec

crawl_segments = crawl_segments_spec()
