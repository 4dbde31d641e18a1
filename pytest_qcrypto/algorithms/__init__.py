"""The catalog as data: kinds and their rules, algorithm names and parameters, value parsers.

Wing 1 of the layers (the folders are the layer diagram, in the order data flows:
algorithms, backends, checks, measure, results, output, gate, targets, pytest_side,
commands).  Imports nothing of the package; never pytest.  Imported by every wing above.
"""
