"""Saved results: the model (``model``), strict loading and atomic saving (``store``,
``strictjson``, ``files``), schema checks (``check``), provenance (``source_tree``).

Wing 5: imports ``algorithms`` and ``measure``; never pytest.  Imported by ``output``,
``gate``, ``targets``, the pytest side and the commands.
"""
