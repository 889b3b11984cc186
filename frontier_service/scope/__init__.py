"""Which URLs the crawl may fetch: allowed domains and depth, the addresses and ports it may
connect to, the crawler's DNS, and the count of every URL dropped, by reason.

`Scope` (crawl_scope.py) judges a canonical URL's domain and depth before it is queued;
`AddressPolicy` (address_policy.py) says which IP addresses and ports are open;
`CrawlResolver` (resolver.py) applies it to every address a name resolves to, so a fetch
never connects where the policy forbids; `UrlDrops` (drops.py) counts and logs what is
not fetched.
"""
