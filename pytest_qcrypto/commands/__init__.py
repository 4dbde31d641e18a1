"""The commands, thin fronts that build a pytest run: ``qcrypto`` (``qcrypto.py``, with
``qcrypto compare`` in ``compare.py``) and ``cryptotest`` (FreeBSD's syntax).

Wing 10, the top: imports any wing below it.  Imported by nothing but the console scripts.
"""
