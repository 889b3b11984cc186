"""The SURT key of a URL, where the CDXJ writer first had it: see `archive_pipelines.surt`
(moved beside the other domain packages so the catalog, which files captures by it, can
import it without importing `warc`, which imports the catalog)."""

from archive_pipelines.surt import surt, urlkey

__all__ = ["surt", "urlkey"]
