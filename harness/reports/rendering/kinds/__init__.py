"""One module per report kind, each defining `REPORT = ReportKind(...)`; listed in `registry.KINDS`."""
