"""A module that keeps a file open once imported: a zygote must refuse to preload it."""

HELD = open(__file__, "rb")  # noqa: SIM115 (held open on purpose)
