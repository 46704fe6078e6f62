"""threshold_contrast: placeholder, replaced below."""
from harness.reports.rendering.registry import ReportKind

REPORT = ReportKind("threshold_contrast", "Threshold contrast (DPPO paper F.4)", lambda data: "stub", lambda d, p: None)
