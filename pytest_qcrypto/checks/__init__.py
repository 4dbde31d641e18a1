"""Correctness before timing: known-answer vectors (``vectors/``, each citing its standard)
and the cross-plugin checks of public-key schemes and KDFs, run against an open context.

Wing 3: imports ``algorithms`` and ``backends`` (the ``Context`` it checks); never pytest.
Imported by ``measure`` (a context is checked when it is opened) and ``targets``.
"""
