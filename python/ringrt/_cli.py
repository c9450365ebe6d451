"""The `ringrt` console script: runs the tool the wheel carries
(ringrt/_lib/ringrt) with the same arguments, in this process's place, so
that `mpirun -np 4 ringrt attn ...` runs the tool on every rank."""
from __future__ import annotations

import os
import sys

from ._lib import BUNDLE_DIR


def main() -> None:
    tool = os.path.join(BUNDLE_DIR, "ringrt")
    if not os.access(tool, os.X_OK):
        sys.exit(f"ringrt: the tool is not in this package ({tool} is missing): this package "
                 "was installed without its library; use the ringrt of the C install "
                 "(cmake --install), or reinstall with pip install ./python")
    os.execv(tool, [tool] + sys.argv[1:])


if __name__ == "__main__":
    main()
