"""The C side of a model library: `xweave.h` (the C API, shipped for programs to
include: `xweave include-dir`) and `xweave_runtime.c` (linked into every library by
`runtime.library_export`). No Python here: a package only so that the files install."""
