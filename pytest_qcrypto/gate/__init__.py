"""The regression gate, pure: thresholds and floors (``rules``), the statistics (``stats``),
verdicts and the decision to retry (``verdicts``, ``tries``), joined baselines (``compare``),
the change grid and summary lines (``summary``, ``text``).  It judges; it never measures.

Wing 7: imports the wings below it; never pytest.  Imported by ``targets``, the pytest side
(``pytest_side.gate`` registers it in a run) and the commands.
"""
