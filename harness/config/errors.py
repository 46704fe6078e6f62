"""The error of a config that cannot run (a leaf: validators of every layer raise it), and the exit code of bad
input."""

EXIT_BAD_INPUT = 2  # bad input: one line naming the key/value and what is allowed, before anything is created


class ConfigError(ValueError):
    """A composed config that cannot run; the message is one line for the user."""
