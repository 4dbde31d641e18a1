#!/usr/bin/env bash
# A/B of two pycryptodome releases in one run: one table, one ratio per cell, one verdict.
#
#   ./ab.sh                      # pycryptodome 3.20.0 (old) against 3.23.0 (new)
#   AB_OLD=3.19.1 AB_NEW=3.21.0 ./ab.sh
#   QCRYPTO_PACKAGE=/path/to/pytest-qcrypto ./ab.sh   # the package from a checkout
#
# Two virtual environments, .venv-old and .venv-new, each with pytest-qcrypto and its
# pycryptodome; pytest runs in .venv-new (its rows are PLUGIN@local) and measures .venv-old
# through an execnet popen gateway (rows PLUGIN@old), the rounds of the two interleaved.
# Exit status: 0 no cell regressed against old, 1 a cell did (or failed), 4 a usage error.
set -euo pipefail
cd "$(dirname "$0")"
old=${AB_OLD:-3.20.0}
new=${AB_NEW:-3.23.0}
package=${QCRYPTO_PACKAGE:-pytest-qcrypto}

for side in old new; do
  version=$old; [ "$side" = new ] && version=$new
  if [ ! -x ".venv-$side/bin/python" ]; then
    python3 -m venv ".venv-$side"
  fi
  ".venv-$side/bin/python" -m pip install -q "$package" "pycryptodome==$version"
done

# The run: every cell measured in both environments, rounds taken in turn (A B, B A, ...),
# the ratio new/old with its 95% interval under the table, and each cell of new judged
# against old's with the gate's rules (threshold 10% by default: --qcrypto-threshold).
AB_ARGS=(--qcrypto-digest=sha256 --qcrypto-cipher=aes-128-gcm --qcrypto-plugin=pycryptodome
         --qcrypto-size=16,1024,16384 --qcrypto-rounds=7
         "--qcrypto-target=old=popen//python=.venv-old/bin/python"
         --qcrypto-interleave --qcrypto-compare-target=old --qcrypto-save=ab.json)
exec .venv-new/bin/python -m pytest -p no:cacheprovider "${AB_ARGS[@]}" "$@"
