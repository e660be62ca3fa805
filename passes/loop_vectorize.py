"""loop-vectorize{loop=NAME kernel=K fma=true lanes=N}: turn a loop into explicit vector operations.

The loop (constant extent W, step 1) disappears; its body is rewritten once, operating
on W lanes at a time (or on groups of `lanes` lanes and a narrower tail, see below). Its variable `%j`
becomes the lane index: inside vector accesses it is replaced by its first value.

* a `loop.load` whose map has `%j` with coefficient 1 in its *last* result only
  (contiguous) becomes a vector load: `loop.load %B[%k, %jo * 8] -> vector<8xf32>`;
* a load not depending on `%j` stays a scalar load; where a vector is needed it is
  broadcast (`vector.broadcast`), as is any other value computed outside the loop or
  not depending on `%j` (constants, outer loads);
* `arith`/`math` ops with a lane-dependent operand operate on vector types (arith's
  conversions become `loop.convert`, which takes vectors);
  `arith.mulf` whose only use is an `arith.addf` becomes `vector.fma` (option
  `fma=false` keeps them apart);
* a store of a lane-dependent value to a contiguous address becomes a vector store
  (a lane-independent value is broadcast first); a store to an address that does not
  depend on `%j` keeps its scalar form when the value does not depend on `%j` either;
* a store of a lane-dependent value to an address that does not depend on `%j` is a
  reduction over the lanes. It is supported in exactly one form:
  `%acc = loop.load X[a]; %s = <combine> %acc, %v; loop.store %s, X[a]` (the same
  address, `%acc` and `%s` used only there, `<combine>` one of addf, mulf, maximumf,
  minimumf, maxnumf, minnumf, addi, muli, andi, ori, xori, max/minsi, max/minui),
  which becomes `vector.reduction <kind>, %v, %acc` (lowered in order, without
  reassociation: the lanes are combined in the loop's order, as the serial loop did);
* loops (`loop.for`) and `scf.if` (with a lane-independent condition) nested in the
  body stay, with their bodies vectorized;
* a bounds guard `scf.if (index(%j) < bound)` (no results; the index an `addi`/`muli`
  of `%j` increasing with it, as a non-dividing `loop-split` makes it) becomes
  `scf.if (index(last lane) < bound) { vectorized body } else { each lane's guarded
  body, scalar }`: whole vectors, and the ragged last one lane by lane.

Widths: W in 2, 4, 8, 16 (at most `lanes`, or 16) makes one `vector<W x T>`; any
other W of at least 2 makes copies of the vectorized
body: W // `lanes` groups of `lanes` lanes (`%j` = 0, 16, 32, ... for 16) and the
remainder peeled in narrower power-of-two groups (40 at 16 lanes: 16, 16, 8; 1000:
62 x 16 and 8), as unroll then vectorize would, and an odd last lane as the scalar
body (7: 4, 2, 1). `lanes` is the target's vector width
(0, the default: the machine model of the module's `xweave.target`; 8 with AVX2, 16
with AVX-512). (LLVM splits a `vector<16xf32>` into two ymm registers itself on AVX2.)

Rejected, naming the op, with the IR left untouched: a load or store whose address
uses `%j` otherwise (stride != 1, `%j` outside the last dimension, `%j floordiv 2`:
a gather/scatter), any other use of `%j` (integer index arithmetic), a comparison on
lane-dependent values (`arith.cmpf`/`cmpi`: xDSL 0.74's `arith` has no i1 vectors, so
no per-lane masks), an `scf.if` or `arith.select` whose condition depends on `%j`,
calls and other ops with memory effects, ops already on vectors, and any dependence
between lanes: every access to a buffer the body writes must use the same address
(`C[i, j]` loaded then stored is fine; `A[j + 1]` read and `A[j]` written is not), and
a store to an address not depending on `%j` may not be a read-modify-write (it would
run once instead of W times), except for the reduction form above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import loop
from xweave.passes.loop_analysis import Linear
from xweave.passes.loop_split import split_loop
from xweave.passes.loop_utils import (
    enclosing_function,
    find_loops,
    fold_access_maps,
    side_effect_free,
)
from xweave.target import machine_model, target_of

SINGLE_WIDTHS = (2, 4, 8, 16)
"""Extents that become one vector of that many lanes."""

SCALAR = 1
"""The width of the last group of an odd extent: one lane, run as the scalar body."""


def vector_groups(start: int, extent: int, lanes: int) -> list[tuple[int, int]] | None:
    """(first value of %j, lanes) of each vector group of a loop of `extent` from
    `start` at `lanes`-wide vectors, or None if it cannot be vectorized."""
    if extent in SINGLE_WIDTHS and extent <= max(lanes, 16):
        return [(start, extent)]
    if extent < 2:
        return None
    groups = [(start + g, lanes) for g in range(0, extent - extent % lanes, lanes)]
    first, rest = start + extent - extent % lanes, extent % lanes
    for width in sorted(SINGLE_WIDTHS, reverse=True):
        while width < lanes and rest >= width:
            groups.append((first, width))
            first, rest = first + width, rest - width
    if rest:
        groups.append((first, 1))
    return groups

_REDUCTION_KINDS: dict[type[Operation], vector.CombiningKindFlag] = {
    arith.AddfOp: vector.CombiningKindFlag.ADD,
    arith.MulfOp: vector.CombiningKindFlag.MUL,
    arith.MaximumfOp: vector.CombiningKindFlag.MAXIMUMF,
    arith.MinimumfOp: vector.CombiningKindFlag.MINIMUMF,
    arith.MaxnumfOp: vector.CombiningKindFlag.MAXNUMF,
    arith.MinnumfOp: vector.CombiningKindFlag.MINNUMF,
    arith.AddiOp: vector.CombiningKindFlag.ADD,
    arith.MuliOp: vector.CombiningKindFlag.MUL,
    arith.AndIOp: vector.CombiningKindFlag.AND,
    arith.OrIOp: vector.CombiningKindFlag.OR,
    arith.XOrIOp: vector.CombiningKindFlag.XOR,
    arith.MaxSIOp: vector.CombiningKindFlag.MAXSI,
    arith.MinSIOp: vector.CombiningKindFlag.MINSI,
    arith.MaxUIOp: vector.CombiningKindFlag.MAXUI,
    arith.MinUIOp: vector.CombiningKindFlag.MINUI,
}


@dataclass(frozen=True)
class LoopVectorizePass(ModulePass):
    """Vectorize the loops named `loop` (in every kernel, or in `kernel`)."""

    name = "loop-vectorize"

    loop: str
    kernel: str | None = None
    fma: bool = True
    lanes: int = 0
    """Lanes of a vector group (4, 8 or 16); 0: the module's target's vector width."""
    split: int = 0
    """With split=F: vectorize the loop F iterations at a time (it becomes `<loop>.outer`
    around the vectorized `<loop>.inner`, the last, ragged step under a bounds guard),
    or refuse, leaving it unsplit, if its body does not vectorize."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.lanes not in (0, 4, 8, 16):
            raise PassFailedException(f"loop-vectorize: lanes={self.lanes} (expected 4, 8 or 16)")
        if self.split < 0:
            raise PassFailedException(f"loop-vectorize: split={self.split} (expected at least 1)")
        lanes = self.lanes or machine_model(target_of(op)).lanes
        loops = find_loops(op, self.loop, self.kernel, self.name)
        if self.split:
            loops = self._split(loops, lanes)
        plans = []
        for for_op in loops:  # analyse (and build) everything before changing anything
            plan = _Plan(for_op, self.fma, lanes)
            try:
                plan.analyse()
            except _Reject as e:
                raise PassFailedException(
                    f"loop-vectorize: cannot vectorize loop '{self.loop}': {e}"
                ) from None
            plans.append(plan)
        built = []
        try:
            for plan in plans:
                built.append((plan, plan.build()))
        except _Reject as e:
            for plan in plans:
                plan.discard()
            raise PassFailedException(
                f"loop-vectorize: cannot vectorize loop '{self.loop}': {e}"
            ) from None
        for plan, ops in built:
            block = plan.loop.parent_block()
            assert block is not None
            block.insert_ops_before(ops, plan.loop)
            plan.loop.detach()
            plan.loop.erase()


    def _split(self, loops: list[loop.ForOp], lanes: int) -> list[loop.ForOp]:
        """Split each loop by `split` once its body is known to vectorize; the inner loops."""
        for for_op in loops:
            try:
                _Plan(for_op, self.fma, lanes).analyse()
            except _Reject as e:
                raise PassFailedException(
                    f"loop-vectorize: cannot vectorize loop '{self.loop}': {e}") from None
        inner = []
        for for_op in loops:
            function = enclosing_function(for_op)
            inner.append(split_loop(for_op, self.split)[1])
            fold_access_maps(function)
        return inner


def vectorize_conflict(for_op: loop.ForOp, lanes: int = 8) -> str | None:
    """Why `loop-vectorize` would reject `for_op`, or None (nothing is changed)."""
    try:
        _Plan(for_op, True, lanes).analyse()
    except _Reject as e:
        return str(e)
    return None


class _Reject(Exception):
    pass


def _describe(op: Operation) -> str:
    return f"'{op.name}'"


# ----------------------------------------------------------------------------------
# Addresses
# ----------------------------------------------------------------------------------


def _iv_coefficient(expr: AffineExpr, dims: set[int]) -> int | None:
    """The coefficient of the dims in `dims` in `expr` if they appear only linearly
    (0 if absent); None if one appears under a div/mod or a non-constant product."""
    form = Linear.of(expr)
    if any(not isinstance(atom, AffineDimExpr) and atom.used_dims() & dims
           for atom in form.terms):
        return None
    return sum(c for atom, c in form.terms.items()
               if isinstance(atom, AffineDimExpr) and atom.position in dims)


def _classify_access(op: loop.LoadOp | loop.StoreOp, iv: SSAValue) -> str:
    """'uniform' (no %j), 'contiguous' (coefficient 1 in the last result only)."""
    dims = {i for i, v in enumerate(op.indices) if v is iv}
    amap = op.map.data
    if not dims or not any(d in r.used_dims() for r in amap.results for d in dims):
        return "uniform"
    if op.vector_type is not None:
        raise _Reject(f"{_describe(op)} is already a vector access and uses the loop variable")
    *leading, last = amap.results
    for r in leading:
        if any(d in r.used_dims() for d in dims):
            raise _Reject(
                f"{_describe(op)} uses the loop variable outside the last dimension of "
                f"{op.memref.type} (a gather/scatter, not a contiguous vector access)"
            )
    coefficient = _iv_coefficient(last, dims)
    if coefficient != 1:
        stride = "a non-affine index" if coefficient is None else f"stride {coefficient}"
        raise _Reject(
            f"{_describe(op)} accesses its buffer with {stride} along the loop "
            "(a gather/scatter: only stride 1 becomes a vector access)"
        )
    return "contiguous"


def _address_key(op: Operation) -> tuple:
    if isinstance(op, loop.LoadOp | loop.StoreOp):
        return (op.memref, op.map.data, tuple(op.indices))
    return (op,)  # other accesses: never equal to anything else


def _lane_map(
    amap: AffineMap, indices: Sequence[SSAValue], iv: SSAValue, first: int
) -> tuple[AffineMap, list[SSAValue]]:
    """`amap` with the loop variable replaced by `first`, and the remaining operands."""
    assert amap.num_symbols == 0, amap  # (the loop dialect's parser makes every operand a dim)
    replacements: list[AffineExpr] = []
    kept: list[SSAValue] = []
    for value in indices:
        if value is iv:
            replacements.append(AffineExpr.constant(first))
        else:
            replacements.append(AffineExpr.dimension(len(kept)))
            kept.append(value)
    return amap.replace_dims_and_symbols(replacements, [], len(kept), 0), kept


# ----------------------------------------------------------------------------------
# Analysis: which values depend on the lane, and what each op becomes
# ----------------------------------------------------------------------------------


@dataclass
class _Plan:
    loop: loop.ForOp
    fma: bool
    lanes: int
    varying: set[SSAValue] = field(default_factory=set)
    """Values that differ between lanes (become vectors)."""
    access: dict[Operation, str] = field(default_factory=dict)
    """Load/store -> 'uniform' or 'contiguous'."""
    fused: set[Operation] = field(default_factory=set)
    """`arith.mulf` ops folded into the `vector.fma` of their user."""
    fma_of: dict[Operation, Operation] = field(default_factory=dict)
    """`arith.addf` -> the `arith.mulf` it fuses with."""
    reductions: dict[Operation, int] = field(default_factory=dict)
    """Combine op of a reduction -> position of its lane-dependent operand."""
    masks: dict[SSAValue, Operation] = field(default_factory=dict)
    """Lane-dependent conditions (i1 per lane: unsupported) -> the comparison making them."""
    lane_index: dict[SSAValue, bool] = field(default_factory=dict)
    """Index values computed from the loop variable (only for guards) -> whether they
    increase with the lane."""
    guards: dict[SSAValue, Operation] = field(default_factory=dict)
    """Lane-dependent guard conditions `index(lane) < bound` -> the comparison."""
    created: list[Operation] = field(default_factory=list)
    hoisted: list[Operation] = field(default_factory=list)
    """Broadcasts of values defined outside the loop, placed before the vector body."""
    outer_broadcasts: dict[tuple[SSAValue, int], SSAValue] = field(default_factory=dict)

    @property
    def iv(self) -> SSAValue:
        return self.loop.induction_var

    def groups(self) -> list[tuple[int, int]]:
        """(first value of %j, lanes) of each vector group."""
        groups = vector_groups(self.loop.lb.value.data, self.loop.extent, self.lanes)
        assert groups is not None
        return groups

    def analyse(self) -> None:
        op = self.loop
        if op.step.value.data != 1:
            raise _Reject(f"its step is {op.step.value.data} (only step 1 makes contiguous lanes)")
        extent = op.extent
        if vector_groups(0, extent, self.lanes) is None:
            raise _Reject(f"its extent {extent} holds no vector (at least 2 lanes)")
        if op.kind.data not in (loop.ForKind.SERIAL, loop.ForKind.VECTORIZED):
            raise _Reject(f"it is already {op.kind.data.value}")
        self._analyse_block(op.body.block)
        self._check_lane_indices()
        for cmp in self.masks.values():  # a lane-dependent condition nobody rejected: unused
            raise _Reject(
                f"{_describe(cmp)} compares lane-dependent values (per-lane i1 masks are "
                "not supported)"
            )
        self._check_dependences()

    def _analyse_block(self, block: Block) -> None:
        for op in block.ops:
            self._analyse_op(op)

    def _is_varying(self, value: SSAValue) -> bool:
        return value in self.varying

    def _analyse_op(self, op: Operation) -> None:
        iv = self.iv
        mask_in = [v for v in op.operands if v in self.masks]
        if mask_in:
            if isinstance(op, scf.IfOp | arith.SelectOp) and op.operands[0] in self.masks:
                raise _Reject(f"{_describe(op)} has a condition that depends on the loop variable")
            if isinstance(op, arith.AndIOp | arith.OrIOp | arith.XOrIOp):
                self.masks[op.results[0]] = self.masks[mask_in[0]]
                return
            raise _Reject(
                f"{_describe(self.masks[mask_in[0]])} compares lane-dependent values (per-lane "
                f"i1 masks are not supported), used by {_describe(op)}"
            )
        if isinstance(op, arith.CmpiOp) and self._guard(op):
            self.guards[op.result] = op
            return
        if isinstance(op, arith.AndIOp) and any(v in self.guards for v in op.operands) and all(
                v in self.guards or self._uniform(v) for v in op.operands):
            self.guards[op.result] = op  # (row < M) && (column(lane) < N)
            return
        if isinstance(op, arith.CmpfOp | arith.CmpiOp) and any(
            v is iv or self._is_varying(v) or v in self.lane_index for v in op.operands
        ):
            self.masks[op.result] = op
            return
        if isinstance(op, arith.AddiOp | arith.MuliOp) and isinstance(op.result.type, IndexType) \
                and any(v is iv or v in self.lane_index for v in op.operands):
            self.lane_index[op.result] = self._increasing(op)
            return
        if isinstance(op, loop.YieldOp | scf.YieldOp):
            if any(v is iv for v in op.operands):
                raise _Reject(f"{_describe(op)} uses the loop variable")
            return
        if isinstance(op, loop.LoadOp):
            kind = self.access[op] = _classify_access(op, iv)
            if kind == "contiguous":
                self.varying.add(op.result)
            return
        if isinstance(op, loop.StoreOp):
            if op.value is iv:
                raise _Reject(f"{_describe(op)} stores the loop variable (integer index math)")
            kind = self.access[op] = _classify_access(op, iv)
            if kind == "uniform" and self._is_varying(op.value):
                if not self._reduction(op):
                    raise _Reject(
                        f"{_describe(op)} stores a lane-dependent value to an address that does "
                        "not depend on the loop variable (a reduction over the lanes, supported "
                        "only as `load X[a]; combine; store X[a]`)"
                    )
            return
        if isinstance(op, loop.ForOp):
            self._analyse_block(op.body.block)
            return
        if isinstance(op, scf.IfOp) and op.cond in self.guards and not op.results:
            for region in op.regions:
                for block in region.blocks:
                    self._analyse_block(block)
            return
        if isinstance(op, scf.IfOp):
            if op.cond is iv or self._is_varying(op.cond) or op.cond in self.guards:
                raise _Reject(f"{_describe(op)} has a condition that depends on the loop variable")
            for region in op.regions:
                for block in region.blocks:
                    self._analyse_block(block)
                    terminator = block.last_op
                    if isinstance(terminator, scf.YieldOp):
                        for result, value in zip(op.results, terminator.operands):
                            if self._is_varying(value):
                                self.varying.add(result)
            for result in op.results:
                if result in self.varying and not _vectorizable_scalar(result.type):
                    raise _Reject(f"{_describe(op)} yields a lane-dependent {result.type}")
            return
        uses_iv = any(v is iv for v in op.operands)
        varying_in = any(self._is_varying(v) for v in op.operands)
        if uses_iv:
            raise _Reject(
                f"{_describe(op)} uses the loop variable (integer index math on it is not "
                "vectorized: fold it into the access maps)"
            )
        if op.regions:
            raise _Reject(
                f"{_describe(op)} (an op with regions) is not supported in a vectorized loop"
            )
        if op.name == "loop.alloc":
            return
        if not side_effect_free(op):
            raise _Reject(f"{_describe(op)} has memory effects (calls are not vectorized)")
        if not varying_in:
            return
        if isinstance(op, arith.SelectOp) and self._is_varying(op.cond):
            raise _Reject(f"{_describe(op)} has a condition that depends on the loop variable")
        if op.dialect_name() not in ("arith", "math") or len(op.results) != 1:
            raise _Reject(f"{_describe(op)} on lane-dependent values is not supported")
        if any(isinstance(v.type, VectorType) for v in (*op.operands, *op.results)):
            raise _Reject(f"{_describe(op)} already operates on vectors")
        if not _vectorizable_scalar(op.results[0].type):
            raise _Reject(f"{_describe(op)} computes a lane-dependent {op.results[0].type}")
        self.varying.add(op.results[0])
        if self.fma and isinstance(op, arith.AddfOp):
            for operand in (op.lhs, op.rhs):
                producer = operand.owner
                if (
                    isinstance(producer, arith.MulfOp)
                    and self._is_varying(producer.result)
                    and _single_use(producer.result)
                    and producer.parent_block() is op.parent_block()
                    and producer not in self.fused
                ):
                    self.fused.add(producer)
                    self.fma_of[op] = producer
                    break

    def _lane_increasing(self, value: SSAValue) -> bool:
        return value is self.iv or self.lane_index.get(value, False)

    def _uniform(self, value: SSAValue) -> bool:
        return not (value is self.iv or value in self.lane_index or self._is_varying(value)
                    or value in self.guards or value in self.masks)

    def _increasing(self, op: Operation) -> bool:
        """Whether an index `addi`/`muli` of the loop variable increases with the lane."""
        a, b = op.operands
        if isinstance(op, arith.AddiOp):
            return all(self._lane_increasing(v) or self._uniform(v) for v in (a, b))
        for x, c in ((a, b), (b, a)):
            factor = c.owner
            if (self._lane_increasing(x) and isinstance(factor, arith.ConstantOp)
                    and isinstance(factor.value, IntegerAttr) and factor.value.value.data > 0):
                return True
        return False

    def _guard(self, cmp: arith.CmpiOp) -> bool:
        """`index(lane) < bound` with an index increasing with the lane: true for the
        last lane of a group means true for all of them (a bounds guard of loop-split)."""
        return (cmp.predicate.value.data in (2, 6)  # slt, ult
                and self._lane_increasing(cmp.lhs) and self._uniform(cmp.rhs))

    def _check_lane_indices(self) -> None:
        """Index math on the loop variable only feeds guards (else it would need integer
        vectors); guard conditions only guard `scf.if`s."""
        for value in self.lane_index:
            for use in value.uses:
                if use.operation.results and (use.operation.results[0] in self.lane_index
                                              or use.operation.results[0] in self.guards):
                    continue
                raise _Reject(
                    f"{_describe(value.owner)} uses the loop variable (integer index math on "
                    "it is not vectorized: fold it into the access maps)"
                )
        for value, cmp in self.guards.items():
            if any(not isinstance(use.operation, scf.IfOp)
                   and use.operation.results[0] not in self.guards for use in value.uses):
                raise _Reject(
                    f"{_describe(cmp)} compares lane-dependent values (per-lane i1 masks are "
                    "not supported)"
                )

    def _reduction(self, store: loop.StoreOp) -> bool:
        """`store` ends `%acc = load X[a]; %s = combine %acc, %v; store %s, X[a]`."""
        combine = store.value.owner
        if not isinstance(combine, Operation) or type(combine) not in _REDUCTION_KINDS:
            return False
        if not _single_use(combine.results[0]):
            return False
        if combine.parent_block() is not store.parent_block():
            return False
        for position, acc in enumerate(combine.operands):
            load = acc.owner
            other = combine.operands[1 - position]
            if (
                isinstance(load, loop.LoadOp)
                and load.parent_block() is store.parent_block()
                and _single_use(load.result)
                and _address_key(load) == _address_key(store)
                and not self._is_varying(acc)
                and self._is_varying(other)
            ):
                self.reductions[combine] = 1 - position
                self.varying.discard(combine.results[0])
                if combine in self.fma_of:  # the product stays a vector multiply
                    self.fused.discard(self.fma_of.pop(combine))
                return True
        return False

    def _check_dependences(self) -> None:
        """Lanes must not communicate through memory (see the module docstring)."""
        accesses: dict[SSAValue, list[Operation]] = {}
        for op in self.loop.body.walk():
            if isinstance(op, loop.LoadOp | loop.StoreOp):
                accesses.setdefault(op.memref, []).append(op)
        reduction_stores = {
            op for op in self.loop.body.walk()
            if isinstance(op, loop.StoreOp) and op.value.owner in self.reductions
        }
        for buffer, ops in accesses.items():
            stores = [o for o in ops if isinstance(o, loop.StoreOp)]
            if not stores:
                continue
            keys = {_address_key(o) for o in ops}
            name = f"%{buffer.name_hint}" if buffer.name_hint else "a buffer"
            if len(keys) > 1:
                raise _Reject(
                    f"lanes may depend on each other through {name}: the body writes it "
                    f"({_describe(stores[0])}) and accesses it at different addresses"
                )
            loads = [o for o in ops if isinstance(o, loop.LoadOp)]
            for store in stores:
                if self.access[store] == "uniform" and loads and store not in reduction_stores:
                    raise _Reject(
                        f"{_describe(store)} writes {name} at an address that does not depend "
                        "on the loop variable, from a value read there: a read-modify-write "
                        f"that would run once instead of {self.loop.extent} times"
                    )

    # ------------------------------------------------------------------------------
    # Building the vectorized body
    # ------------------------------------------------------------------------------

    def build(self) -> list[Operation]:
        """The ops replacing the loop (not inserted anywhere yet)."""
        ops: list[Operation] = []
        for first, lanes in self.groups():
            if lanes == SCALAR:
                self._scalar_body(first, ops)
            else:
                _Builder(self, first, lanes).block(self.loop.body.block, ops)
        return self.hoisted + ops

    def _scalar_body(self, first: int, out: list[Operation]) -> None:
        """The loop body for one value of its variable (a peeled odd lane)."""
        lane = arith.ConstantOp(IntegerAttr(first, IndexType()))
        self.created.append(lane)
        out.append(lane)
        mapper: dict[SSAValue, SSAValue] = {self.iv: lane.result}
        for op in self.loop.body.block.ops:
            if not isinstance(op, loop.YieldOp):
                new = op.clone(value_mapper=mapper)
                self.created.append(new)
                out.append(new)

    def discard(self) -> None:
        """Drop the uses that built ops hold on the IR's values (after a failure)."""
        for op in self.created:
            op.drop_all_references()
        self.created.clear()


def _defined_outside(op: Operation) -> list[SSAValue]:
    """Values `op` or the ops nested in it use that are defined outside it."""
    inside = {id(o) for o in op.walk()}
    values: list[SSAValue] = []
    for nested in op.walk():
        for v in nested.operands:
            owner = v.owner
            parent = owner.parent_op() if isinstance(owner, Block) else owner
            if (parent is None or id(parent) not in inside) and v not in values:
                values.append(v)
    return values


def _single_use(value: SSAValue) -> bool:
    return sum(1 for _ in value.uses) == 1


def _vectorizable_scalar(t: Attribute) -> bool:
    return isinstance(t, AnyFloat) or (isinstance(t, IntegerType) and not isinstance(t, IndexType))


_CONVERSIONS: dict[type[Operation], str] = {
    arith.ExtSIOp: "extsi", arith.ExtUIOp: "extui", arith.TruncIOp: "trunci",
    arith.SIToFPOp: "sitofp", arith.UIToFPOp: "uitofp", arith.FPToSIOp: "fptosi",
    arith.FPToUIOp: "fptoui", arith.ExtFOp: "extf", arith.TruncFOp: "truncf",
}
"""arith conversions and the `loop.convert` kind of their vector form."""


class _Builder:
    """Emits one vector group of the body: old values -> new values."""

    def __init__(self, plan: _Plan, first: int, lanes: int):
        self.plan = plan
        self.first = first
        self.lanes = lanes
        self.values: dict[SSAValue, SSAValue] = {}
        self.caches: list[tuple[list[Operation], dict[SSAValue, SSAValue]]] = []

    def new(self, op: Operation, out: list[Operation]) -> Operation:
        self.plan.created.append(op)
        out.append(op)
        return op

    def get(self, value: SSAValue) -> SSAValue:
        return self.values.get(value, value)

    def vector_type(self, scalar: Attribute) -> VectorType:
        return VectorType(scalar, [self.lanes])

    def as_vector(self, old: SSAValue, out: list[Operation]) -> SSAValue:
        """The new value of `old` as a vector (broadcast if lane-independent)."""
        new = self.get(old)
        if old in self.plan.varying:
            return new
        for _, cache in reversed(self.caches):
            if new in cache:
                return cache[new]
        if old not in self.values:  # defined outside the loop: broadcast once, before
            key = (new, self.lanes)
            cached = self.plan.outer_broadcasts.get(key)
            if cached is None:
                op = vector.BroadcastOp(new, self.vector_type(new.type))
                self.plan.created.append(op)
                self.plan.hoisted.append(op)
                cached = self.plan.outer_broadcasts[key] = op.vector
            return cached
        op = self.new(vector.BroadcastOp(new, self.vector_type(new.type)), out)
        self.caches[-1][1][new] = op.vector
        return op.vector

    def block(self, block: Block, out: list[Operation]) -> None:
        self.caches.append((out, {}))
        for op in block.ops:
            if isinstance(op, loop.YieldOp):
                continue
            self.op(op, out)
        self.caches.pop()

    def result(self, old: SSAValue, new: SSAValue) -> None:
        if old.name_hint and not new.name_hint:
            new.name_hint = old.name_hint
        self.values[old] = new

    def op(self, op: Operation, out: list[Operation]) -> None:
        plan, iv = self.plan, self.plan.iv
        if isinstance(op, loop.LoadOp):
            if plan.access[op] == "uniform":
                self.clone(op, out)
                return
            amap, indices = _lane_map(op.map.data, op.indices, iv, self.first)
            new = self.new(
                loop.LoadOp(
                    self.get(op.memref), [self.get(v) for v in indices], amap,
                    self.vector_type(op.result.type),
                ),
                out,
            )
            self.result(op.result, new.results[0])
            return
        if isinstance(op, loop.StoreOp):
            if plan.access[op] == "uniform":
                self.clone(op, out)
                return
            amap, indices = _lane_map(op.map.data, op.indices, iv, self.first)
            value = self.as_vector(op.value, out)
            self.new(
                loop.StoreOp(value, self.get(op.memref), [self.get(v) for v in indices], amap),
                out,
            )
            return
        if isinstance(op, loop.ForOp):
            body = Block(arg_types=[IndexType()])
            self.result(op.induction_var, body.args[0])
            ops: list[Operation] = []
            self.block(op.body.block, ops)
            body.add_ops(ops)
            new = loop.ForOp(op.lb, op.ub, op.step, op.kind, body, op.loop_name)
            self.new(new, out)
            return
        if op.results and (op.results[0] in plan.lane_index or op.results[0] in plan.guards):
            return  # index math of a guard: evaluated per lane where it is needed
        if isinstance(op, scf.IfOp) and op.cond in plan.guards:
            self.build_guarded(op, out)
            return
        if isinstance(op, scf.IfOp):
            self.build_if(op, out)
            return
        if op in plan.fused:
            return  # emitted as part of the vector.fma of its user
        if op in plan.reductions:
            lane_operand = op.operands[plan.reductions[op]]
            acc = self.get(op.operands[1 - plan.reductions[op]])
            kind = vector.CombiningKindAttr(_REDUCTION_KINDS[type(op)])
            new = self.new(
                vector.ReductionOp.create(  # (its __init__ gives the vector type to the result)
                    operands=[self.as_vector(lane_operand, out), acc],
                    result_types=[op.results[0].type],
                    properties={"kind": kind, "fastmath": vector.FastMathFlagsAttr("none")},
                ),
                out,
            )
            self.result(op.results[0], new.results[0])
            return
        if op.results and op.results[0] in plan.varying:
            if op in plan.fma_of:
                mul = plan.fma_of[op]
                other = op.rhs if op.lhs is mul.result else op.lhs
                new = self.new(
                    vector.FMAOp(
                        self.as_vector(mul.lhs, out),
                        self.as_vector(mul.rhs, out),
                        self.as_vector(other, out),
                    ),
                    out,
                )
            elif type(op) in _CONVERSIONS:  # (xDSL's arith casts take scalars only)
                new = self.new(loop.ConvertOp(
                    _CONVERSIONS[type(op)], self.as_vector(op.operands[0], out),
                    self.vector_type(op.results[0].type)), out)
            else:
                keep_condition = isinstance(op, arith.SelectOp)  # an i1 scalar
                operands = [
                    self.get(v) if keep_condition and i == 0 else self.as_vector(v, out)
                    for i, v in enumerate(op.operands)
                ]
                new = self.new(
                    type(op).create(
                        operands=operands,
                        result_types=[self.vector_type(op.results[0].type)],
                        properties=dict(op.properties),
                        attributes=dict(op.attributes),
                    ),
                    out,
                )
                try:
                    new.verify()
                except Exception as e:  # noqa: BLE001 - xDSL raises VerifyException and others
                    raise _Reject(f"{_describe(op)} has no vector form ({e})") from None
            self.result(op.results[0], new.results[0])
            return
        self.clone(op, out)

    def clone(self, op: Operation, out: list[Operation]) -> None:
        new = op.clone(value_mapper=self.values)
        self.new(new, out)
        for old, value in zip(op.results, new.results):
            self.result(old, value)

    def scalar(self, old: SSAValue, lane: int, cache: dict[SSAValue, SSAValue],
               out: list[Operation]) -> SSAValue:
        """The value of `old` in lane `lane` of this group (emitted into `out`)."""
        plan = self.plan
        if old in cache:
            return cache[old]
        if old is plan.iv:
            new = self.new(arith.ConstantOp(IntegerAttr(self.first + lane, IndexType())), out).result
        elif old in plan.lane_index or old in plan.guards:
            op = old.owner
            assert isinstance(op, Operation)
            operands = [self.scalar(v, lane, cache, out) for v in op.operands]
            new = self.new(op.clone(value_mapper=dict(zip(op.operands, operands))), out).results[0]
        elif old in plan.varying:
            new = self.new(vector.ExtractOp(self.get(old), [lane], old.type), out).results[0]
        else:
            new = self.get(old)
        cache[old] = new
        return new

    def build_guarded(self, op: scf.IfOp, out: list[Operation]) -> None:
        """A bounds guard on the lane (`index(lane) < bound`): if its last lane passes,
        the whole group does (the vectorized body); else each lane runs the guarded
        body on its own (scalar; the last, ragged tile of a split)."""
        last_cache: dict[SSAValue, SSAValue] = {}
        cond = self.scalar(op.cond, self.lanes - 1, last_cache, out)
        whole: list[Operation] = []
        self.caches.append((whole, {}))
        for inner in op.true_region.block.ops:
            if not isinstance(inner, scf.YieldOp):
                self.op(inner, whole)
        self.caches.pop()
        whole.append(scf.YieldOp())
        lanes: list[Operation] = []
        outside = _defined_outside(op)
        for lane in range(self.lanes):
            cache: dict[SSAValue, SSAValue] = {}
            mapper = {v: self.scalar(v, lane, cache, lanes) for v in outside}
            self.new(op.clone(value_mapper=mapper), lanes)
        lanes.append(scf.YieldOp())
        self.new(scf.IfOp(cond, [], Region(Block(whole)), Region(Block(lanes))), out)

    def build_if(self, op: scf.IfOp, out: list[Operation]) -> None:
        plan = self.plan
        result_types = [
            self.vector_type(r.type) if r in plan.varying else r.type for r in op.results
        ]
        regions = []
        for region in op.regions:
            if not region.blocks:
                regions.append(Region())
                continue
            ops: list[Operation] = []
            self.caches.append((ops, {}))
            for inner in region.block.ops:
                if isinstance(inner, scf.YieldOp):
                    values = [
                        self.as_vector(v, ops) if r in plan.varying else self.get(v)
                        for v, r in zip(inner.operands, op.results)
                    ]
                    self.new(scf.YieldOp(*values), ops)
                else:
                    self.op(inner, ops)
            self.caches.pop()
            regions.append(Region(Block(ops)))
        false_region = regions[1] if len(regions) > 1 else None
        new = self.new(scf.IfOp(self.get(op.cond), result_types, regions[0], false_region), out)
        for old, value in zip(op.results, new.results):
            self.result(old, value)

