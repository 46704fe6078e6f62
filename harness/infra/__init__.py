"""The bottom layer: secrets, locks, process control, code version, caches, resources, run records and the
`Refused` signal. Imports nothing else from harness, so every other layer may use it."""
