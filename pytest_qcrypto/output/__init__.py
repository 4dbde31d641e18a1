"""What a person reads: the table model (``tables``) and its outliers (``outliers``), the
registered output layouts (``layouts``, ``ops_layouts``, ``cryptotest_layout``: one ``@layout``
function each), markdown, the terminal summary and what the commands stream as they go
(``render``), joined saved files (``report``) and plots (``plot``, matplotlib imported on use).

Wing 6: imports ``algorithms``, ``measure`` and ``results``; never pytest.  Imported by
``gate``, ``targets``, the pytest side and the commands.
"""
