"""Statistics on numpy and scipy only: intervals, tests and their power, sequential designs, robust tests,
collapse and failure detection (`collapse`, `failures`) and an objective × threshold interaction
(`interaction`). A claim's pre-registered design (tests, SESOI, power), parsed from its sweep file, is in
harness/reports/evidence/design.py."""
