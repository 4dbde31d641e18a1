"""What a person reads: the table model (``tables``), the registered output layouts
(``layouts``, ``ops_layouts``: one ``@layout`` function each), markdown, the terminal summary
(``render``), joined saved files (``report``) and plots (``plot``, matplotlib imported on use).

Wing 6: imports ``algorithms``, ``measure`` and ``results``; never pytest.  Imported by
``gate``, ``targets``, the pytest side and the commands.
"""
