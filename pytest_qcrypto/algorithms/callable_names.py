"""The names of callables measured as your own code (:mod:`pytest_qcrypto.measure.callables`).

A callable is measured under a name its caller gives (``encrypt_record``): the name is
the "algorithm" of its cells, in tables, results files and the gate's rule patterns
(``encrypt_record:*:4096 = 10%``); its row (the "plugin") is always :data:`PLUGIN`.  So
that a cell can never be taken for a catalog algorithm's, a name must not be a catalog
name or alias in any spelling (``SHA-256``), nor one of a typo of one
(:data:`TYPO_CUTOFF`: ``sha265`` would silently turn a mistyped threshold for sha256 into
a rule for a callable nobody measures).  Plain Python: catalog only.
"""

from __future__ import annotations

import difflib
import re

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind

#: The row (plugin name) of every callable's cells.
PLUGIN = "callable"
#: A name: a letter or ``_`` first, then letters, digits, ``_ . -`` (at most 64 characters):
#: no ``:`` (it separates a rule pattern's fields), ``=``, ``*`` or space.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")
#: A name this close (:func:`difflib.SequenceMatcher` ratio of the compact spellings) to a
#: catalog name or alias is refused as a likely typo of it.
TYPO_CUTOFF = 0.8


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a callable (one line), or None."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        return (f"the name {name!r:.70} of a callable must be a letter or _ then letters, "
                "digits, _ . or - (at most 64 characters), e.g. name=\"encrypt_record\"")
    alg = catalog.lookup(name)
    if alg is not None:
        return (f"the name {name!r} of a callable is the catalog's {alg.word} {alg.name}: "
                "give it a name of its own, e.g. name=\"my_" + alg.name.replace("-", "_") + "\"")
    close = [a.name for a in catalog.ALGORITHMS if _close(name, a)]
    if close:
        return (f"the name {name!r} of a callable is too close to the catalog's "
                f"{', '.join(dict.fromkeys(close[:3]))} (a typo?): give it another name")
    return None


def _close(name: str, alg: Algorithm) -> bool:
    key = re.sub(r"[-_/.\s]+", "", name.lower())
    return any(difflib.SequenceMatcher(None, key, re.sub(r"[-_/\s]+", "", n.lower())).ratio()
               >= TYPO_CUTOFF for n in (alg.name, *alg.aliases))


def algorithm(name: str) -> Algorithm:
    """The stand-in catalog entry of the callable called ``name`` (kind ``callable``: its
    rules say what one operation is); ``ValueError`` with :func:`name_problem`'s text."""
    problem = name_problem(name)
    if problem:
        raise ValueError(problem)
    return Algorithm(name, Kind.CALLABLE)


def lookup(name: str) -> Algorithm | None:
    """The catalog's algorithm called ``name``, else the stand-in entry of a callable of
    that name (:func:`algorithm`), else None (not a usable name)."""
    alg = catalog.lookup(name)
    if alg is not None:
        return alg
    return None if name_problem(name) else Algorithm(name, Kind.CALLABLE)
