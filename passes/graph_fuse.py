"""graph-fuse: group graph ops into `graph.fused` regions, after TVM's fusion rules.

Every graph op has a pattern kind (`graph.PatternKind`). As in the TVM paper (and
TVM's FuseOps), an op is fused into its immediate post-dominator — the first op every
path from its result passes through — when the ops on those paths allow it:

* an out-elementwise-fusable op (conv2d, dense, matmul, pools, softmax...) absorbs the
  elementwise/broadcast ops that consume it, when every path carries its result
  elementwise (bias add, batch norm, relu, residual add, clip...);
* elementwise/broadcast ops fuse into a following injective op, a reduction or an
  existing group (their inputs then join e.g. a conv epilogue);
* injective ops (reshape, transpose, pad, ...) fuse with injective consumers and into
  reductions, after the first round so that complex ops pick their epilogues first;
* a reduction takes no epilogue, opaque ops stand alone.

Fusing into the post-dominator means a value with several users is only fused when
the group absorbs all of them, so a group computes exactly one result that leaves it.
Constants stay outside, as operands of the group. Groups of one op are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from xweave.dialects import graph, loop
from xweave.dialects.graph import PatternKind

ELEMWISE, BROADCAST, INJECTIVE = PatternKind.ELEMWISE, PatternKind.BROADCAST, PatternKind.INJECTIVE
REDUCTION, OUT_FUSABLE, OPAQUE = (
    PatternKind.REDUCTION,
    PatternKind.OUT_ELEMWISE_FUSABLE,
    PatternKind.OPAQUE,
)


@dataclass
class _Node:
    """A fusable op, the ops consuming its results (index, edge kind), and whether
    a result is used outside the fusable ops (returned, or read by another kind)."""

    op: Operation
    kind: PatternKind
    outputs: list[tuple[int, PatternKind]] = field(default_factory=list)
    external: bool = False


def _edge_kind(consumer: Operation, operand: SSAValue) -> PatternKind:
    """The consumer's kind, but elementwise for a broadcast op reading an operand of
    its own shape (so `conv2d -> add bias` counts as elementwise, and so does an
    integer conv's `requantize`, whose result type differs from its input's)."""
    kind = consumer.pattern_kind  # pyright: ignore[reportAttributeAccessIssue]
    result = consumer.results[0].type
    if kind == BROADCAST and operand.type.get_shape() == result.get_shape():  # pyright: ignore
        return ELEMWISE
    return kind


def _graph(block: Block) -> list[_Node]:
    ops = [
        op
        for op in block.ops
        if isinstance(op, graph.GraphOperation) and not isinstance(op, graph.ConstantOp)
    ]
    index = {op: i for i, op in enumerate(ops)}
    nodes = [_Node(op, op.pattern_kind) for op in ops]
    for node in nodes:
        for result in node.op.results:
            for use in result.uses:
                consumer = index.get(use.operation)
                if consumer is None:
                    node.external = True
                else:
                    node.outputs.append((consumer, _edge_kind(use.operation, result)))
    return nodes


@dataclass
class _PostDominators:
    """The post-dominator tree of the nodes (TVM's DominatorTree): for each node its
    immediate post-dominator (`None` if a result leaves the graph) and the largest
    edge kind on the paths to it."""

    parent: list[int | None]
    depth: list[int]
    kind: list[PatternKind]

    @staticmethod
    def of(nodes: list[_Node]) -> _PostDominators:
        n = len(nodes)
        tree = _PostDominators([None] * n, [1] * n, [ELEMWISE] * n)
        for i in reversed(range(n)):  # consumers come later in the block
            node = nodes[i]
            if node.external:
                tree.kind[i] = OPAQUE
                continue
            if not node.outputs:
                continue
            parent, kind = node.outputs[0]
            for other, edge in node.outputs[1:]:
                parent, kind = tree._common_ancestor(parent, other, kind)
                kind = max(kind, edge)
            tree.parent[i] = parent
            tree.kind[i] = kind
            tree.depth[i] = 1 if parent is None else tree.depth[parent] + 1
        return tree

    def _common_ancestor(
        self, a: int | None, b: int | None, kind: PatternKind
    ) -> tuple[int | None, PatternKind]:
        while a != b:
            if a is None or b is None:
                return None, kind
            if self.depth[a] < self.depth[b]:
                kind, b = max(kind, self.kind[b]), self.parent[b]
            elif self.depth[b] < self.depth[a]:
                kind, a = max(kind, self.kind[a]), self.parent[a]
            else:
                kind = max(kind, self.kind[a], self.kind[b])
                a, b = self.parent[a], self.parent[b]
        return a, kind


class _Groups:
    """Union-find over the nodes; a root carries its group's size and kind (the
    largest kind in the group: its master op's)."""

    def __init__(self, nodes: list[_Node]):
        self.parent = list(range(len(nodes)))
        self.size = [1] * len(nodes)
        self.kind = [node.kind for node in nodes]

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def merge(self, child: int, target: int) -> None:
        child, target = self.find(child), self.find(target)
        if child == target:
            return
        self.parent[child] = target
        self.size[target] += self.size[child]
        self.kind[target] = max(self.kind[target], self.kind[child])


Condition = Callable[[PatternKind, bool], bool]


@dataclass
class _Fuser:
    nodes: list[_Node]
    max_depth: int

    def __post_init__(self):
        self.tree = _PostDominators.of(self.nodes)
        self.groups = _Groups(self.nodes)

    def _paths(self, src: int, sink: int) -> set[int]:
        """The nodes on the paths from `src` to its post-dominator `sink`, sink
        included, src excluded (every path from src reaches sink)."""
        seen: set[int] = set()
        stack = [c for c, _ in self.nodes[src].outputs]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            if i != sink:
                stack.extend(c for c, _ in self.nodes[i].outputs)
        return seen

    def _check(self, src: int, sink: int, condition: Condition) -> bool:
        return all(
            condition(self.groups.kind[self.groups.find(i)], i == sink)
            for i in self._paths(src, sink)
        )

    def _size_after(self, src: int, sink: int) -> int:
        roots = {self.groups.find(i) for i in [src, *self._paths(src, sink)]}
        return sum(self.groups.size[r] for r in roots)

    def _commit(self, src: int, sink: int) -> None:
        for i in {src, *self._paths(src, sink)}:
            self.groups.merge(i, sink)

    def run(self) -> None:
        for phase in (0, 1):
            for i in range(len(self.nodes)):
                self._visit(i, phase)

    def _visit(self, i: int, phase: int) -> None:
        groups, sink = self.groups, self.tree.parent[i]
        kind = groups.kind[groups.find(i)]
        if kind == OPAQUE or sink is None or groups.find(sink) == groups.find(i):
            return
        if self._size_after(i, sink) > self.max_depth:
            return
        path_kind = self.tree.kind[i]
        if kind == OUT_FUSABLE:
            # conv2d & co.: an elementwise epilogue of elementwise/broadcast ops.
            if phase == 0 and path_kind == ELEMWISE and self._check(
                i, sink, lambda k, _is_sink: k <= BROADCAST
            ):
                self._commit(i, sink)
        elif kind <= BROADCAST:
            if path_kind <= INJECTIVE or path_kind == REDUCTION:
                # Into an injective/broadcast chain, a reduction or an existing group.
                if self._check(i, sink, lambda k, is_sink: k != OPAQUE if is_sink else k <= INJECTIVE):
                    self._commit(i, sink)
        elif kind == INJECTIVE:
            # After the first round, so that complex ops have taken their epilogues.
            if phase == 1 and (path_kind <= INJECTIVE or path_kind == REDUCTION):
                if self._check(
                    i, sink, lambda k, is_sink: k <= INJECTIVE or (is_sink and k == REDUCTION)
                ):
                    self._commit(i, sink)
        # A reduction takes no epilogue.

    def groups_to_fuse(self) -> list[list[Operation]]:
        """Every group of two or more ops, its ops in block order."""
        members: dict[int, list[Operation]] = {}
        for i, node in enumerate(self.nodes):
            members.setdefault(self.groups.find(i), []).append(node.op)
        return [ops for ops in members.values() if len(ops) > 1]


def fuse_ops(ops: list[Operation]) -> graph.FusedOp:
    """Replace `ops` (one block, in order, closed under the uses of all but the values
    that leave the group) by a `graph.fused` op placed where the last of them was."""
    members = set(ops)
    inputs: list[SSAValue] = []
    for op in ops:
        for value in op.operands:
            if value.owner not in members and value not in inputs:
                inputs.append(value)
    outputs = [
        r for op in ops for r in op.results if any(u.operation not in members for u in r.uses)
    ] or list(ops[-1].results)
    for result in outputs:
        for use in result.uses:
            if use.operation not in members and use.operation.is_before_in_block(ops[-1]):
                raise ValueError(  # the rules only make convex groups
                    f"graph-fuse: group is not convex ({use.operation.name} reads it from inside)"
                )
    body = Block(arg_types=[v.type for v in inputs])
    for arg, value in zip(body.args, inputs):
        arg.name_hint = value.name_hint
    fused = graph.FusedOp(inputs, [r.type for r in outputs], Region(body))
    ops[-1].parent_block().insert_op_before(fused, ops[-1])  # pyright: ignore[reportOptionalMemberAccess]
    for result, new in zip(outputs, fused.results):
        new.name_hint = result.name_hint
        result.replace_uses_with_if(new, lambda use: use.operation not in members)
    for value, arg in zip(inputs, body.args):
        value.replace_uses_with_if(arg, lambda use: use.operation in members)
    for op in ops:
        op.detach()
        body.add_op(op)
    body.add_op(graph.YieldOp(*outputs))
    return fused


@dataclass(frozen=True)
class GraphFusePass(ModulePass):
    """Fuse graph ops into `graph.fused` groups (TVM's operator fusion rules).

    `max-depth` bounds the number of ops in a group.
    """

    name = "graph-fuse"

    max_depth: int = 256

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_depth < 1:
            raise PassFailedException(f"graph-fuse: max-depth must be at least 1, got {self.max_depth}")
        for function in op.ops:
            if not isinstance(function, func.FuncOp) or loop.is_kernel(function):
                continue
            for block in function.body.blocks:
                fuser = _Fuser(_graph(block), self.max_depth)
                fuser.run()
                for group in fuser.groups_to_fuse():
                    fuse_ops(group)
