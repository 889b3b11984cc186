"""Taking over a PostgreSQL frontier (`frontier`, `visited_urls`, `domain_metadata`) into
the hybrid frontier: `frontier-service migrate-from-postgres DSN`."""
