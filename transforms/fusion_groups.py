"""
Fusion groups: TVM's `GraphPartitioner` (src/relay/analysis/graph_partitioner.cc) over the
graph of `fusion_graph`.

Every node starts in a group of its own; groups are a union-find whose root carries the
group's pattern, its anchor (the OutEWiseFusable op it holds, if any), its node count and its
placement. `partition` runs TVM's three phases in post-DFS order; in each, a node may be fused
into its immediate post-dominator when every path between them passes the phase's condition
(`_check_path`), and `_commit_fuse` then merges every group met on those paths into the
post-dominator's group:

- phase 0: an OutEWiseFusable anchor joins its post-dominator when the edges on the way are all
  ElemWise (the anchor's result is read whole, at its own shape) and every node on the way,
  and the post-dominator's group, is at most Broadcast;
- phases 0 and 1: an ElemWise/Broadcast node joins its post-dominator when the edges on the
  way are at most Injective or CommReduce, the nodes on the way are at most Injective, and the
  post-dominator's group is anything but Opaque or a tuple (it may hold an anchor);
- phase 1: an Injective node (or a tuple) joins when every node on the way, and the
  post-dominator's group, is at most Injective;
- phase 2: an Injective node joins a tuple that has been fused into an Injective consumer.

Opaque nodes never move, and nothing is fused into a tuple in phases 0 and 1. A fusion is
refused when the merged group would exceed `max_depth` nodes, counted as TVM counts them
(`_count_fused_nodes_with_new_child`: the post-dominator's group plus the groups of the nodes
on the paths, as recorded in each node's own group object). The one rule TVM does not have:
every node on the paths, and the post-dominator, must be in a group of the same placement as
the node being fused, so that a group never mixes `se_scope`s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xrelay.dialects.relay import OpPatternKind
from xrelay.transforms.fusion_graph import (
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    TUPLE,
    DomNode,
    IndexedForwardGraph,
    Node,
    post_dominator_tree,
)

COMM_REDUCE = OpPatternKind.COMM_REDUCE
OUT_EWISE_FUSABLE = OpPatternKind.OUT_EWISE_FUSABLE

PathCondition = Callable[[OpPatternKind, bool], bool]


class Group:
    """A union-find node; the root of a set describes the whole group."""

    __slots__ = ("parent", "pattern", "root_node", "anchor", "num_nodes", "placement")

    def __init__(self, node: Node):
        self.parent: Group | None = None
        self.pattern = node.pattern
        self.root_node = node
        self.anchor = node if node.pattern == OUT_EWISE_FUSABLE else None
        self.num_nodes = 1
        self.placement = node.placement

    def find_root(self) -> Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while (parent := node.parent) is not None:  # path compression
            node.parent, node = root, parent
        return root


def _at_most_broadcast(kind: OpPatternKind, is_sink: bool) -> bool:
    return kind <= BROADCAST


def _at_most_injective(kind: OpPatternKind, is_sink: bool) -> bool:
    return kind <= INJECTIVE


def _into_injective_or_reduce(kind: OpPatternKind, is_sink: bool) -> bool:
    # Injective ops on parallel branches may join an ElemWise/Broadcast source; the sink may
    # already hold an OutEWiseFusable anchor.
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= INJECTIVE or kind in (COMM_REDUCE, OUT_EWISE_FUSABLE)


class GraphPartitioner:
    """Partitions one graph into fusion groups."""

    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        self.groups: list[Group] = []

    def partition(self, graph: IndexedForwardGraph) -> list[Group]:
        """The group of each node (by post-DFS index); call `find_root()` on it."""
        self.groups = [Group(node) for node in graph.post_dfs_order]
        tree = post_dominator_tree(graph)
        for phase in range(3):
            self._run_fuse(graph, tree, phase)
        return self.groups

    # --- the phases -------------------------------------------------------------------------

    def _run_fuse(self, graph: IndexedForwardGraph, tree: list[DomNode], phase: int) -> None:
        for index, node in enumerate(graph.post_dfs_order):
            group = self.groups[index]
            dom = tree[index]
            if group.pattern == OPAQUE or dom.parent is None:
                continue
            sink = dom.parent.gnode
            if self._count_fused_nodes_with_new_child(node, sink) > self.max_depth:
                continue
            if phase == 2:
                self._fuse_into_tuple(node, group, sink)
                continue
            sink_group = self.groups[sink.index]
            if group.find_root() is sink_group.find_root() or sink_group.pattern == TUPLE:
                continue
            self._fuse_by_pattern(node, group, dom, sink, phase)

    def _fuse_by_pattern(self, node: Node, group: Group, dom: DomNode, sink: Node, phase: int) -> None:
        if group.pattern == OUT_EWISE_FUSABLE:
            if phase == 0 and dom.pattern == ELEMWISE:
                self._fuse_if(node, sink, _at_most_broadcast)
        elif group.pattern <= BROADCAST:
            if dom.pattern <= INJECTIVE or dom.pattern == COMM_REDUCE:
                self._fuse_if(node, sink, _into_injective_or_reduce)
        elif group.pattern in (INJECTIVE, TUPLE) and phase == 1:
            # Deferred to phase 1, so that anchors finish fusing first.
            self._fuse_if(node, sink, _at_most_injective)
        # CommReduce nodes start no fusion.

    def _fuse_into_tuple(self, node: Node, group: Group, sink: Node) -> None:
        """Phase 2: an Injective node joins a tuple that joined an Injective consumer."""
        if group.pattern > INJECTIVE:
            return
        sink_group = self.groups[sink.index]
        sink_root = sink_group.find_root()
        if sink_root.pattern == TUPLE:
            return
        if sink_group.pattern == TUPLE and sink_root.pattern <= INJECTIVE:
            self._fuse_if(node, sink, _at_most_injective)

    def _fuse_if(self, src: Node, sink: Node, condition: PathCondition) -> None:
        if self._check_path(src, sink, condition):
            self._commit_fuse(src, sink)

    # --- paths between a node and its post-dominator ----------------------------------------

    def _between(self, src: Node, sink: Node) -> Iterator[Node]:
        """The nodes on paths from `src` (excluded) to `sink` (included), each once."""
        seen: set[int] = set()
        stack = [edge.node for edge in src.outputs]
        while stack:
            node = stack.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            yield node
            if node is not sink:
                stack.extend(edge.node for edge in node.outputs)

    def _check_path(self, src: Node, sink: Node, condition: PathCondition) -> bool:
        placement = self.groups[src.index].find_root().placement
        for node in self._between(src, sink):
            root = self.groups[node.index].find_root()
            if not condition(root.pattern, node is sink) or root.placement != placement:
                return False
        return True

    def _commit_fuse(self, src: Node, sink: Node) -> None:
        target = self.groups[sink.index]
        self._merge(self.groups[src.index], target)
        for node in self._between(src, sink):
            if node is not sink:
                self._merge(self.groups[node.index], target)

    def _merge(self, child: Group, parent: Group) -> None:
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor is not None:
            parent.anchor = child.anchor
            parent.pattern = max(child.pattern, parent.pattern)

    def _count_fused_nodes_with_new_child(self, child: Node, sink: Node) -> int:
        """TVM's count: the sink's group, plus each node's own group object up to the sink."""
        total = self.groups[sink.index].find_root().num_nodes + self.groups[child.index].num_nodes
        for node in self._between(child, sink):
            if node is not sink:
                total += self.groups[node.index].num_nodes
        return total
