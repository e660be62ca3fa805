"""The rewrites in `passes/`, by name (`pipeline.all_passes` adds the conversions of
`lowering/`, `schedule-kernels` and the accelerators' passes).

Keys are kept in alphabetical order; each getter imports its module lazily, as xDSL's
own registry does, so that `xweave-opt --help` stays fast.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass of `passes/`, keyed by its command-line name."""

    def graph_alter_layout():
        from xweave.passes.graph_alter_layout import GraphAlterLayoutPass

        return GraphAlterLayoutPass

    def graph_calibrate():
        from xweave.passes.quantize import GraphCalibratePass

        return GraphCalibratePass

    def graph_cse():
        from xweave.passes.graph_cse import GraphCsePass

        return GraphCsePass

    def graph_fold_constants():
        from xweave.passes.graph_fold_constants import GraphFoldConstantsPass

        return GraphFoldConstantsPass

    def graph_fold_qdq():
        from xweave.passes.graph_fold_qdq import GraphFoldQdqPass

        return GraphFoldQdqPass

    def graph_fuse():
        from xweave.passes.graph_fuse import GraphFusePass

        return GraphFusePass

    def graph_quantize():
        from xweave.passes.quantize import GraphQuantizePass

        return GraphQuantizePass

    def graph_simplify_inference():
        from xweave.passes.graph_simplify_inference import GraphSimplifyInferencePass

        return GraphSimplifyInferencePass

    def graph_widen_weights():
        from xweave.passes.graph_widen_weights import GraphWidenWeightsPass

        return GraphWidenWeightsPass

    def graph_winograd():
        from xweave.passes.graph_winograd import GraphWinogradPass

        return GraphWinogradPass

    def loop_cache_write():
        from xweave.passes.loop_cache_write import LoopCacheWritePass

        return LoopCacheWritePass

    def loop_compute_at():
        from xweave.passes.loop_compute_at import LoopComputeAtPass

        return LoopComputeAtPass

    def loop_defer_accumulate():
        from xweave.passes.loop_defer_accumulate import LoopDeferAccumulatePass

        return LoopDeferAccumulatePass

    def loop_dot():
        from xweave.passes.loop_dot import LoopDotPass

        return LoopDotPass

    def loop_fuse():
        from xweave.passes.loop_fuse import LoopFusePass

        return LoopFusePass

    def loop_inline():
        from xweave.passes.loop_inline import LoopInlinePass

        return LoopInlinePass

    def loop_pack():
        from xweave.passes.loop_pack import LoopPackPass

        return LoopPackPass

    def loop_fold_constant_packs():
        from xweave.passes.loop_fold_packs import LoopFoldConstantPacksPass

        return LoopFoldConstantPacksPass

    def loop_parallel():
        from xweave.passes.loop_parallel import LoopParallelPass

        return LoopParallelPass

    def loop_prefetch():
        from xweave.passes.loop_prefetch import LoopPrefetchPass

        return LoopPrefetchPass

    def loop_reorder():
        from xweave.passes.loop_reorder import LoopReorderPass

        return LoopReorderPass

    def loop_simplify():
        from xweave.passes.loop_simplify import LoopSimplifyPass

        return LoopSimplifyPass

    def loop_rfactor():
        from xweave.passes.loop_rfactor import LoopRfactorPass

        return LoopRfactorPass

    def loop_simplify_indices():
        from xweave.passes.loop_index_simplify import LoopSimplifyIndicesPass

        return LoopSimplifyIndicesPass

    def loop_split():
        from xweave.passes.loop_split import LoopSplitPass

        return LoopSplitPass

    def loop_unguard():
        from xweave.passes.loop_unguard import LoopUnguardPass

        return LoopUnguardPass

    def loop_unroll():
        from xweave.passes.loop_unroll import LoopUnrollPass

        return LoopUnrollPass

    def loop_vectorize():
        from xweave.passes.loop_vectorize import LoopVectorizePass

        return LoopVectorizePass

    def plan_memory():
        from xweave.passes.memory_plan import PlanMemoryPass

        return PlanMemoryPass

    def count_kernel_flops():
        from xweave.passes.profile_kernels import CountKernelFlopsPass

        return CountKernelFlopsPass

    def profile_kernels():
        from xweave.passes.profile_kernels import ProfileKernelsPass

        return ProfileKernelsPass

    def tensorize():
        from xweave.passes.tensorize import TensorizePass

        return TensorizePass

    def virtual_threads():
        from xweave.passes.virtual_threads import VirtualThreadsPass

        return VirtualThreadsPass

    return {
        "count-kernel-flops": count_kernel_flops,
        "graph-alter-layout": graph_alter_layout,
        "graph-calibrate": graph_calibrate,
        "graph-cse": graph_cse,
        "graph-fold-constants": graph_fold_constants,
        "graph-fold-qdq": graph_fold_qdq,
        "graph-fuse": graph_fuse,
        "graph-quantize": graph_quantize,
        "graph-simplify-inference": graph_simplify_inference,
        "graph-widen-weights": graph_widen_weights,
        "graph-winograd": graph_winograd,
        "loop-cache-write": loop_cache_write,
        "loop-compute-at": loop_compute_at,
        "loop-defer-accumulate": loop_defer_accumulate,
        "loop-dot": loop_dot,
        "loop-fold-constant-packs": loop_fold_constant_packs,
        "loop-fuse": loop_fuse,
        "loop-inline": loop_inline,
        "loop-pack": loop_pack,
        "loop-parallel": loop_parallel,
        "loop-prefetch": loop_prefetch,
        "loop-reorder": loop_reorder,
        "loop-simplify": loop_simplify,
        "loop-rfactor": loop_rfactor,
        "loop-simplify-indices": loop_simplify_indices,
        "loop-split": loop_split,
        "loop-unguard": loop_unguard,
        "loop-unroll": loop_unroll,
        "loop-vectorize": loop_vectorize,
        "plan-memory": plan_memory,
        "profile-kernels": profile_kernels,
        "tensorize": tensorize,
        "virtual-threads": virtual_threads,
    }
