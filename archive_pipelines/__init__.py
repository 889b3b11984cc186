"""archive-pipelines: a web-archive platform orchestrated by Dagster."""

__version__ = "0.1.0"
