"""Pin the schedule templates' machine model: the default register blocks the tests
expect are those of a 16-register (AVX2) CPU, whatever this host has. Tests of the
32-register choices set it themselves (`test_templates_register_blocks.py`)."""

import os

os.environ["XWEAVE_VECTOR_REGISTERS"] = "16"
