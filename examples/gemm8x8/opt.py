"""`python -m gemm8x8.opt`: xweave-opt with the gemm8x8 unit loaded (its dialect, and the
`convert-loop-to-gemm8x8` pass); `tensorize{intrinsic="gemm8x8.gemm_add" ...}` finds the
unit through the accelerator registry like any other."""

from __future__ import annotations

import sys

from xweave.cli import XweaveOptMain, opt_main

from .accelerator import ConvertLoopToGemm8x8Pass
from .isa import Gemm8x8


class Gemm8x8OptMain(XweaveOptMain):
    def register_all_dialects(self):
        super().register_all_dialects()
        self.ctx.register_dialect(Gemm8x8.name, lambda: Gemm8x8)

    def register_all_passes(self):
        super().register_all_passes()
        self.register_pass(ConvertLoopToGemm8x8Pass.name, lambda: ConvertLoopToGemm8x8Pass)


if __name__ == "__main__":
    import xweave.cli

    xweave.cli.XweaveOptMain = Gemm8x8OptMain  # opt_main's driver, with the unit loaded
    opt_main(sys.argv[1:])
