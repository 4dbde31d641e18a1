"""Other interpreters and hosts through execnet: the link to a target (``link``), the code
run there (``remote``), interleaved A/B pairs (``pairs``) and their summary lines.

Wing 8: imports the wings below it; never pytest.  Imported by ``pytest_side.targets``.
"""
