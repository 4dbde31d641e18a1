"""The interface's own cost: time a plugin's null request, beside its algorithms' per-call cost.

A kernel plugin's per-call cost (:mod:`pytest_qcrypto.measure.cost_model`) holds
two things: what its interface costs per request (system calls, copies, the
kernel's request set-up) and what the algorithm costs per call (its set-up,
finalisation).  The plugin's :meth:`~pytest_qcrypto.backends.base.CryptoPlugin.null_request`
sends the smallest request its interface takes to an algorithm that does no work
(``afalg``: ``ecb(cipher_null)``; ``devcrypto``: the null cipher of the ABI), and
:func:`time_null` times it with the harness's doubling-count loop
(:data:`MIN_TIME` seconds a round, :data:`ROUNDS` rounds, the median round over its
count).  Plugins without one (the software plugins) are not timed and show nothing.

:func:`of_run` times each plugin of a run's measurements once, after they were
measured, in this process (not on an ``--qcrypto-target``), for the notes under the
tables (``-v`` or ``--qcrypto-model``).  The core: no pytest.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from typing import Any

from pytest_qcrypto.backends.base import CryptoPlugin, Unavailable, Unsupported
from pytest_qcrypto.measure import harness
from pytest_qcrypto.measure.cost_model import InterfaceCost

#: Seconds of each round of null requests, and rounds (the figure is the median round).
MIN_TIME = 0.05
ROUNDS = 5


def time_null(plugin: CryptoPlugin, *, min_time: float = MIN_TIME, rounds: int = ROUNDS,
              clock: Callable[[], int] | None = None,
              cpu_clock: Callable[[], int] | None = None) -> InterfaceCost | None:
    """The :class:`InterfaceCost` of ``plugin``'s null request: seconds per request, or why
    it was not timed (the plugin refused it, or a request or the clock failed: the notes say
    so, never raise); None when the plugin has no null request.  ``clock`` and ``cpu_clock`` as :func:`harness.time_runner`'s."""
    try:
        request = plugin.null_request()
    except (Unsupported, Unavailable) as exc:
        return InterfaceCost(plugin.name, "", None, str(exc))
    if request is None:
        return None
    try:
        t = harness.time_runner(request.run, min_time=min_time, rounds=rounds, clock=clock,
                                cpu_clock=cpu_clock)
    except Exception as exc:  # noqa: BLE001  (a kernel error, a broken clock: said, not raised)
        return InterfaceCost(plugin.name, request.what, None,
                             f"the null request failed: {type(exc).__name__}: {exc}")
    finally:
        request.close()
    return InterfaceCost(plugin.name, request.what, statistics.median(t.rounds_s) / t.count)


def of_run(resolve: Callable[[str], Any], measured: Iterable[Any]) -> dict[str, InterfaceCost]:
    """The interface cost of each plugin (as typed) of ``measured`` that has a null request,
    each plugin timed once; ``resolve(typed)`` gives its
    :class:`~pytest_qcrypto.measure.registry.Selection` (a name it cannot resolve is left out).
    """
    timed: dict[int, InterfaceCost | None] = {}
    out: dict[str, InterfaceCost] = {}
    for typed in dict.fromkeys(m.plugin for m in measured):
        try:
            plugin = resolve(typed).plugin
        except ValueError:
            continue
        if id(plugin) not in timed:
            timed[id(plugin)] = time_null(plugin)
        if (cost := timed[id(plugin)]) is not None:
            out[typed] = cost
    return out
