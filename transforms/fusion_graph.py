"""
The dataflow graph and post-dominator tree of one function body, as fuse-ops sees them.

This is TVM's `IndexedForwardGraph` and `DominatorTree` (src/relay/analysis/graph_partitioner.h)
over xDSL ops:

- A node is an op of the function body, or a *tuple*: TVM's `relay.concatenate` takes a Tuple
  expression, so each `relay.concatenate` gets one virtual tuple node between its operands and
  itself, and a function returning several values returns a tuple node.
- Nodes are indexed in TVM's order: the post-order of a depth-first walk from the returned
  values, operands in order (each node once). Ops the walk does not reach (results used by no op
  of the body, e.g. a kept `func.call`) start further walks, in program order.
- Each node records its pattern kind (`PATTERN` of a primitive op, `OPAQUE` for every other op,
  `TUPLE` for a tuple), its placement (`se_scope` of a primitive op; a value of its own for
  any other op, so that it never matches) and its output edges. An edge carries the consumer's
  pattern, except that a Broadcast consumer whose result has the operand's shape makes the
  edge ElemWise. Tuple edges are Injective.
- Returned values (or the returned tuple), and the roots of the further walks, are *extern*:
  they have no post-dominator.

The post-dominator tree is built in one pass in reverse post-order: the parent of a node is the
least common ancestor of its consumers in the tree, and the node's `pattern` is the strongest
edge pattern met on the way there (TVM's single-pass LCA construction for a DAG).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeGuard

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue

from xrelay.dialects.relay import PRIMITIVE_OPS, ConcatenateOp, OpPatternKind, RelayOp

ELEMWISE = OpPatternKind.ELEMWISE
BROADCAST = OpPatternKind.BROADCAST
INJECTIVE = OpPatternKind.INJECTIVE
TUPLE = OpPatternKind.TUPLE
OPAQUE = OpPatternKind.OPAQUE


class Edge:
    """A dataflow edge to a consumer `node`, with the pattern the consumer applies."""

    __slots__ = ("node", "pattern")

    def __init__(self, node: Node, pattern: OpPatternKind):
        self.node = node
        self.pattern = pattern


class Node:
    """An op (or a virtual tuple, `op is None`) of the dataflow graph."""

    __slots__ = ("op", "index", "extern_ref", "pattern", "placement", "outputs", "inputs")

    def __init__(self, op: Operation | None, pattern: OpPatternKind, placement: object):
        self.op = op
        self.index = -1  # position in post-DFS order; -1 until the walk finishes the node
        self.extern_ref = False
        self.pattern = pattern
        self.placement = placement
        self.outputs: list[Edge] = []
        self.inputs: list[Node] | None = None  # children of the walk, set when it enters the node

    def __repr__(self) -> str:
        name = self.op.name if self.op is not None else "tuple"
        return f"Node({self.index}, {name}, {self.pattern.name})"


class IndexedForwardGraph:
    """The nodes of one function body in post-DFS order."""

    def __init__(self) -> None:
        self.post_dfs_order: list[Node] = []


# --- building the graph -----------------------------------------------------------------------


_PRIMITIVE_TYPES = frozenset(PRIMITIVE_OPS)


def is_primitive(op: Operation) -> TypeGuard[RelayOp]:
    # An exact type lookup: `isinstance` against 37 IRDL classes dominated the pass's time.
    return type(op) in _PRIMITIVE_TYPES


def placement_of(op: Operation) -> object:
    """What fusion compares: the primitive op's `se_scope` (or None), else a value of its own."""
    if is_primitive(op):
        return op.se_scope
    return object()


def edge_pattern(consumer: Operation, operand: SSAValue) -> OpPatternKind:
    if not is_primitive(consumer):
        return OPAQUE
    pattern = consumer.PATTERN
    if pattern == BROADCAST and _same_shape(operand, consumer.results[0]):
        return ELEMWISE
    return pattern


def _same_shape(a: SSAValue, b: SSAValue) -> bool:
    shape = _tensor_shape(a.type)
    return shape is not None and shape == _tensor_shape(b.type)


def _tensor_shape(ty: Attribute) -> tuple[int, ...] | None:
    return tuple(ty.get_shape()) if isinstance(ty, TensorType) else None


class _GraphBuilder:
    """TVM's `IndexedForwardGraph::Creator`: `update` adds edges, `visit` walks in post-order."""

    def __init__(self, block: Block):
        self.block = block
        self.graph = IndexedForwardGraph()
        self.node_of: dict[Operation, Node] = {}

    def node(self, op: Operation) -> Node:
        node = self.node_of.get(op)
        if node is None:
            pattern = op.PATTERN if is_primitive(op) else OPAQUE
            node = self.node_of[op] = Node(op, pattern, placement_of(op))
        return node

    def update(self, value: SSAValue, parent: Node | None, pattern: OpPatternKind) -> Node | None:
        """Records that `parent` consumes `value` (or that `value` escapes, without a parent)."""
        if not isinstance(value, OpResult) or value.op.parent is not self.block:
            return None  # block arguments and values from outside are not nodes
        node = self.node(value.op)
        if parent is None:
            node.extern_ref = True
        else:
            node.outputs.append(Edge(parent, pattern))
        return node

    def tuple_of(self, values: Sequence[SSAValue], placement: object) -> Node:
        node = Node(None, TUPLE, placement)
        node.inputs = self._children(values, node, lambda _: INJECTIVE)
        return node

    def _children(
        self,
        values: Sequence[SSAValue],
        parent: Node,
        pattern_of: Callable[[SSAValue], OpPatternKind],
    ) -> list[Node]:
        children: list[Node] = []
        for value in values:
            child = self.update(value, parent, pattern_of(value))
            if child is not None:
                children.append(child)
        return children

    def enter(self, node: Node) -> list[Node]:
        """Adds the edges from `node`'s operands (before walking them, as TVM does)."""
        if node.inputs is not None:
            return node.inputs
        op = node.op
        assert op is not None
        if isinstance(op, ConcatenateOp):
            tuple_node = self.tuple_of(op.operands, node.placement)
            tuple_node.outputs.append(Edge(node, INJECTIVE))
            node.inputs = [tuple_node]
        else:
            node.inputs = self._children(op.operands, node, lambda v: edge_pattern(op, v))
        return node.inputs

    def visit(self, root: Node) -> None:
        """Post-order depth-first walk from `root`, without recursion (chains can be long)."""
        if root.index >= 0:
            return
        stack: list[tuple[Node, Iterator[Node]]] = [(root, iter(self.enter(root)))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child.index < 0:  # not finished; in a DAG it cannot be on the stack
                    stack.append((child, iter(self.enter(child))))
                    break
            else:
                stack.pop()
                node.index = len(self.graph.post_dfs_order)
                self.graph.post_dfs_order.append(node)


def build_graph(block: Block) -> IndexedForwardGraph:
    """The dataflow graph of a function body (a block ending in `func.return`)."""
    builder = _GraphBuilder(block)
    terminator = block.last_op
    returned = list(terminator.operands) if isinstance(terminator, func.ReturnOp) else []
    if len(returned) == 1:
        root = builder.update(returned[0], None, OPAQUE)
        if root is not None:
            builder.visit(root)
    elif returned:
        root = builder.tuple_of(returned, object())
        root.extern_ref = True
        builder.visit(root)
    for op in block.ops:
        if op is terminator or _used_in(op, block):
            continue
        node = builder.node(op)
        if node.index < 0:
            node.extern_ref = True
            builder.visit(node)
    return builder.graph


def _used_in(op: Operation, block: Block) -> bool:
    return any(use.operation.parent is block for result in op.results for use in result.uses)


# --- the post-dominator tree ------------------------------------------------------------------


class DomNode:
    """A node of the post-dominator tree: `parent` is the immediate post-dominator."""

    __slots__ = ("gnode", "parent", "depth", "pattern")

    def __init__(self, gnode: Node, parent: DomNode | None, depth: int, pattern: OpPatternKind):
        self.gnode = gnode
        self.parent = parent
        self.depth = depth
        self.pattern = pattern  # the strongest edge pattern on the paths to `parent`


def post_dominator_tree(graph: IndexedForwardGraph) -> list[DomNode]:
    """One tree node per graph node (same index), built in reverse post-DFS order."""
    order = graph.post_dfs_order
    tree: list[DomNode | None] = [None] * len(order)
    for index in reversed(range(len(order))):
        tree[index] = _dom_node(order[index], tree)
    return [node for node in tree if node is not None]  # all of them, by now


def _dom_node(gnode: Node, tree: Sequence[DomNode | None]) -> DomNode:
    if gnode.extern_ref:
        return DomNode(gnode, None, 1, OPAQUE)
    pattern = ELEMWISE
    if not gnode.outputs:
        return DomNode(gnode, None, 1, pattern)
    first = gnode.outputs[0]
    parent: DomNode | None = tree[first.node.index]
    pattern = max(pattern, first.pattern)
    for edge in gnode.outputs[1:]:
        parent, pattern = _least_common_ancestor(parent, tree[edge.node.index], pattern)
        pattern = max(pattern, edge.pattern)
    return DomNode(gnode, parent, parent.depth + 1 if parent is not None else 1, pattern)


def _least_common_ancestor(
    lhs: DomNode | None, rhs: DomNode | None, pattern: OpPatternKind
) -> tuple[DomNode | None, OpPatternKind]:
    """Climbs both nodes to their common ancestor, folding the patterns passed into `pattern`."""
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None, pattern
        if lhs.depth < rhs.depth:
            pattern = max(pattern, rhs.pattern)
            rhs = rhs.parent
        elif rhs.depth < lhs.depth:
            pattern = max(pattern, lhs.pattern)
            lhs = lhs.parent
        else:
            pattern = max(pattern, lhs.pattern, rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs, pattern
