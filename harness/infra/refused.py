"""Bad input found once Hydra has taken over (in a callback or a job): one line and exit code 2.

A BaseException, because Hydra's callback and job wrappers turn an Exception into a warning or a failed
job; `harness.cli` catches it and prints the line. Imports nothing from harness."""


class Refused(BaseException):
    pass
