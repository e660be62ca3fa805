"""The C compiler that links a model library for a target triple.

For this machine's architecture: `$XWEAVE_CC`, else `$CC`, else `cc`, `gcc` or `clang`
on the PATH. For another architecture: `$XWEAVE_CC`, else the GNU cross compiler named
after the triple (`aarch64-linux-gnu-gcc`, as Debian's `gcc-aarch64-linux-gnu`
installs it), which brings the target's libc, libm and libgomp. Not finding one is a
`ToolchainError` naming the package that provides it.
"""

from __future__ import annotations

import os
import shlex
import shutil

from xweave.errors import XweaveError
from xweave.runtime.elf import host_machine_arch
from xweave.target import arch_of_triple

CC_ENV = "XWEAVE_CC"
"""Environment variable naming the C compiler (with arguments) that links libraries."""

DEBIAN_PACKAGES = {
    "aarch64": "gcc-aarch64-linux-gnu",
    "riscv64": "gcc-riscv64-linux-gnu",
    "x86_64": "gcc-x86-64-linux-gnu",
}
"""The Debian/Ubuntu package of each architecture's GNU cross compiler."""


class ToolchainError(XweaveError):
    """No C compiler to link a library for the target, or linking failed."""


def gnu_triple(triple: str) -> str:
    """The GNU toolchain's prefix of an LLVM triple (`aarch64-unknown-linux-gnu` ->
    `aarch64-linux-gnu`)."""
    parts = triple.split("-")
    if len(parts) == 4 and parts[1] in ("unknown", "pc", "none"):
        parts = [parts[0], *parts[2:]]
    return "-".join(parts)


def c_compiler(triple: str, given: str | None = None) -> list[str]:
    """The command (program and arguments) of a C compiler for `triple`: `given`, else
    `$XWEAVE_CC`, else one found on the PATH (see the module's docstring)."""
    given = given or os.environ.get(CC_ENV, "").strip() or None
    arch = arch_of_triple(triple)
    if given is not None:
        words = shlex.split(given)
        if not words or shutil.which(words[0]) is None:
            raise ToolchainError(f"C compiler {given!r} not found (given with cc= or ${CC_ENV})")
        return words
    if arch == host_machine_arch():
        env = os.environ.get("CC", "").strip()
        candidates = ([env] if env else []) + ["cc", "gcc", "clang"]
    else:
        prefix = gnu_triple(triple)
        candidates = [f"{prefix}-gcc"] + ([f"{triple}-gcc"] if triple != prefix else [])
    for candidate in candidates:
        words = shlex.split(candidate)
        if words and shutil.which(words[0]) is not None:
            return words
    package = DEBIAN_PACKAGES.get(arch)
    hint = (f"install one (Debian/Ubuntu: apt-get install {package})" if package and
            arch != host_machine_arch() else "install a C compiler (gcc or clang)")
    raise ToolchainError(f"no C compiler for {triple} (looked for "
                         f"{', '.join(candidates)} on the PATH): {hint}, or name one "
                         f"with ${CC_ENV}")
