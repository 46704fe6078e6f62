"""The error of a config that cannot run (a leaf: validators of every layer raise it)."""


class ConfigError(ValueError):
    """A composed config that cannot run; the message is one line for the user."""
