"""Ensembles: many built-in runs of one shape trained in one process, batched over a member dimension."""
