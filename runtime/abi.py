"""The names compiled code and the runtime agree on.

The code generator (`lowering/`, `passes/memory_plan.py`, `passes/profile_kernels.py`)
writes these symbols into a model's object and the runtime looks them up in the loaded
code: as in TVM, whose code generators include the runtime's C API, the compiler
depends on the runtime's definition of the calling convention, not the reverse.
"""

PARAM_PREFIX = "xweave_param_"
"""Prefix of the symbol of every parameter global in the llvm stage."""

PARAM_TABLE = "xweave_param_table"
"""The array of parameter addresses an object's code reads (filled by `load_object`)."""
PARAM_NAMES = "xweave_param_names"
"""The parameters' names, NUL-separated, in the table's order."""
PARAM_NBYTES = "xweave_param_nbytes"
"""The parameters' byte sizes, in the table's order."""
PARAM_COUNT = "xweave_param_count"
"""The number of entries of the table."""

ABI_GLOBAL = "xweave_abi"
"""The object's description of itself (JSON bytes, see `runtime.module`)."""
ABI_NBYTES = "xweave_abi_nbytes"
"""The byte count of `ABI_GLOBAL`."""

ENTRY = "xweave_entry"
"""`void xweave_entry(ptr args)`: calls @main with `args[0..n)` (inputs, outputs, call
state), so that a C runtime calls a model of any arity through one signature."""

NUM_THREADS_GLOBAL = "xweave_num_threads"
"""The `i32` global of a compiled object holding its thread count (0: libgomp's default)."""

ARENA = "xweave_arena"
"""Symbol of the arena global (call state: each call of @main is given a buffer of its size)."""

PROFILE_GLOBAL = "xweave_profile"
"""The i64 global of a profiling build with one nanosecond counter per timed kernel call
(call state, as the arena)."""
