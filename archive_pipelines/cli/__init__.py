"""`archive-pipelines`: the command line for people who do not run Dagster."""
