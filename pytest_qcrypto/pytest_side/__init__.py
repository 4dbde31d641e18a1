"""The pytest side: the option table (``options``), the hook specification (``hookspecs``),
the run's settings and hooks (``run``), the speed matrix (``matrix``), the ledger of what was
measured, the fixtures, the gate's and the targets' pytest parts, saving, progress.

Wing 9: the first wing that imports pytest; imports every wing below it.  Imported by
``pytest_qcrypto.plugin`` (the pytest11 entry point, kept thin) and the commands.
"""
