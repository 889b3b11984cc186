"""Several machines, one crawl: domain ownership by slot, URLs sent between machines through
Redis, and what a machine that left or died holds (see the README, "Crawling from several
machines")."""
