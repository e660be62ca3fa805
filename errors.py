"""User-facing errors: what is wrong and where. The CLIs print them without a traceback."""


class XweaveError(Exception):
    """Base of every error a user can cause (bad model, bad IR, bad inputs)."""

    exit_code = 2


class UnsupportedOpsError(XweaveError):
    """The model uses operators xweave cannot compile; lists every one of them."""


class ModelError(XweaveError):
    """The model file is malformed, or its shapes cannot be inferred."""


class InputError(XweaveError):
    """`run` was given a missing, extra, or wrongly shaped/typed input."""


class InternalCompilerError(XweaveError):
    """A compiler pass failed unexpectedly (a bug in xweave, not in the input): names
    the stage, the pass and the kernel, and where the reproducer was written."""

    exit_code = 3


class ElidedResourceError(XweaveError):
    """IR printed with its weights left out (`--elide-resources-larger-than`) was asked
    for the values of one of them (to compile, run or fold it)."""
