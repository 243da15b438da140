"""Print the versions a GPU run's numbers depend on: CuPy, NVRTC, Numba and nvmath-python (ci/gpu.sh writes them
to its env.txt beside nvidia-smi's line).

    python3 -m tools.versions
"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="python3 -m tools.versions", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    import cupy
    import numba
    import nvmath
    from cupy.cuda import nvrtc
    print("cupy", cupy.__version__, "nvrtc", nvrtc.getVersion(), "numba", numba.__version__, "nvmath", nvmath.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
