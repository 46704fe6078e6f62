"""Statistics on numpy and scipy only: intervals, tests and their power, sequential designs, robust tests,
collapse detection, and a claim's pre-registered design (tests, SESOI, power)."""
