#!/usr/bin/env python3
"""Print the OPENBLAS_CORETYPE values this processor can execute, one a line.

OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its kernels by CPU;
OPENBLAS_CORETYPE forces another choice, so one machine can compute what other
processors compute. A kernel set runs only where the CPU has its instructions:

  Prescott     SSE3                       (every x86-64 machine here)
  Sandybridge  AVX
  Haswell      AVX2 + FMA
  Zen          AVX2 + FMA                 (AMD's tuning of the same instructions)
  SkylakeX     AVX-512 F, BW, DQ, VL
  Cooperlake   SkylakeX's + AVX-512 BF16

Used by the check sweep and the demo/run tests under every kernel
(tests/cli/CMakeLists.txt, docs/check.md). Elsewhere than x86-64 it prints
nothing: the default kernel is the only one.
"""
import platform
import sys

REQUIREMENTS = [
    ("Prescott", {"pni"}),
    ("Sandybridge", {"avx"}),
    ("Haswell", {"avx2", "fma"}),
    ("Zen", {"avx2", "fma"}),
    ("SkylakeX", {"avx512f", "avx512bw", "avx512dq", "avx512vl"}),
    ("Cooperlake", {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"}),
]


def cpu_flags(path="/proc/cpuinfo"):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def runnable(flags=None):
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    flags = cpu_flags() if flags is None else flags
    return [name for name, needs in REQUIREMENTS if needs <= flags]


if __name__ == "__main__":
    for name in runnable():
        print(name)
    sys.exit(0)
