"""Pin the target every test compiles for, whatever this host is: a Zen 3 (AVX2, 16
vector registers, 8-lane vectors), the machine the schedules' expectations were written
for. Code compiled for it runs on any x86-64 host with AVX2 and FMA. Tests of other
machine models name their target themselves."""

import os

os.environ["XWEAVE_TARGET"] = "llvm -mcpu=znver3"
