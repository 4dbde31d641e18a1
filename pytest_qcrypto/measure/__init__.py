"""Measuring: the doubling-count loop and ``Measurement`` (``harness``), the count a
calibration run predicts (``counts``), opening and checking a context (``bench``), the
crypto plugin registry, time limits, isolation, interrupts, jobs, threads, the machine's
state, noisy figures (``noise``), the cost model with the kernel plugins' null requests
(``interface_cost``), your own callables.

Wing 4: imports ``algorithms``, ``backends`` and ``checks``; never pytest (``bench.open_context``
measures from plain Python).  Imported by ``results`` and everything above.
"""
