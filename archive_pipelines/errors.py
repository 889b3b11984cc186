"""The project's error type: one clear line for a person, never a traceback wall."""


class ArchiveError(Exception):
    """An error whose message is meant to be shown to a user as is.

    Messages name the setting, path or record involved and say what is wrong.
    """


class SettingsError(ArchiveError):
    """The settings file or an environment variable is malformed or invalid."""


class CatalogError(ArchiveError):
    """The catalog database is unreachable or a write violated a constraint."""


class DataDirError(ArchiveError):
    """The data directory is missing, not writable, or a path would leave it."""
