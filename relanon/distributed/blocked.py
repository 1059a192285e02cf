"""The ``linear_sum`` link of tables too large for one machine: spatial blocks as partitions.

1. *Counts.* Each batch of released parents gets its expected numbers of children (their avatarized
   counts) and, as the local engine does, the counts of their ``k`` nearest original parents as other
   plausible counts, found among the originals of the same batch. The children to link are shared out
   among the parent batches in proportion to their expected totals, then each batch allocates its share
   (:func:`relanon.multitable.linking.allocate_counts`) and lays out its *slots* (a parent repeated once per
   child it receives).
2. *Blocks.* Children and slots are ranked along the cells of a tree fitted on a seeded sample of the
   children (:mod:`relanon.multitable.linking.blocks`) and cut at the same ranks into blocks of
   :data:`BLOCK_CHILDREN` children and as many slots; each block is solved on a worker with
   :func:`relanon.multitable.linking.match_linear_sum` with the settings one machine uses for the whole link:
   its small groups and repair passes (:func:`relanon.multitable.linking.blocked_settings`), and the
   minimum-cost flow after them only when the whole link is small enough for one machine to run it
   (:func:`relanon.multitable.linking.uses_flow`), in every block or in none. The work per child is the
   local engine's: a block of a link too large for the flow costs a third of the time it takes with the
   flow (``benchmarks/block_flow.py``: 200,000 children, blocks of 150 and 5 passes).
3. *Border repairs.* :data:`REPAIR_PASSES` times, the children are regrouped along a randomly rotated cut
   into groups of :data:`BLOCK_CHILDREN`; in each, the children near a border between blocks (those of the
   groups of ``BAND`` small groups that mix blocks: :func:`relanon.multitable.linking.border_band`) are
   re-solved with the slots they hold (:func:`relanon.multitable.linking.repair_borders`): a child left on
   the wrong side of a border finds its parent, the total distance never rises, and the children far from
   every border, already solved and repaired with their whole neighbourhood, are left alone.

Every step reads and writes parts of the working folder; a worker holds one batch, block or group.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from relanon.distributed.avatars import POS
from relanon.distributed.cluster import gather_counted
from relanon.distributed.links import PARENT, child_side, link_columns, lookup_keys, part, project
from relanon.distributed.state import Released
from relanon.distributed.work import folder, gather_rows, parts_of, read_parts, split_rows, write
from relanon.engine.batches import partition_generator
from relanon.engine.neighbours import cross_neighbours
from relanon.multitable import linking
from relanon.multitable.linking import blocks
from relanon.schema.graph import about_people

BLOCK_CHILDREN = 200_000
"""Children per block: one machine solves 200,000 in tens of seconds, with little memory."""

REPAIR_PASSES = 2
"""Passes along rotated cuts across the blocks' borders; in each group, the small groups of the local engine's
size that hold children of more than one block are re-solved GROUP_PASSES times (along GROUP_PASSES cuts)."""

GROUP_PASSES = 2
SAMPLE_POINTS = 65_536
BAND = 4
"""Width of the border band, in small groups: a small group is repaired when the ``BAND`` groups around it
(cut together) mix blocks. Measured (``benchmarks/dask_link.py``): 1 leaves the total 0.2 % higher on
100,000 children in blocks of 30,000; 8 costs more time for 0.1 %."""

BLOCK = "_block"
"""The block a child was first solved in: the repairs re-solve only small groups mixing blocks."""


def linear_sum(client, schema, link, work, child: Released, parent: Released, space, seed,
               block_children: int = BLOCK_CHILDREN, progress=None) -> int:
    """Link every child of ``link`` to a slot of a released parent; returns the children linked.

    ``progress(done, total)`` is called as the blocks, then the groups of each border repair, are solved."""
    columns = link_columns(schema, link, parent)
    base = folder(work, "link", link.child, link.column)
    share = min(1.0, SAMPLE_POINTS / max(child.rows, 1))
    kids = client.gather([
        client.submit(_children, str(part(folder(work, "avatars", link.child), b)), space, columns, link, child,
                      str(folder(base, "children")), b, share, partition_generator(seed, "sample", b), pure=False)
        for b in range(child.n_batches)])
    n_linked = sum(rows for rows, _ in kids)
    count = parent.internal[("count", link.child, link.column)]
    bounds = _count_bounds(client, [str(part(folder(work, "batches", link.parent), b)) for b in range(parent.n_batches)],
                           count, parent.rows, parent.k if about_people(schema, link.parent) else 1)
    expected = client.gather([
        client.submit(_parents, str(part(folder(work, "batches", link.parent), b)),
                      str(part(folder(work, "avatars", link.parent), b)), space, columns, count, parent.k,
                      int(parent.offsets[b]), str(folder(base, "parents")), b, bounds, pure=False)
        for b in range(parent.n_batches)])
    totals = linking.allocate_counts(expected, n_linked, random_state=partition_generator(seed, "totals", 0)) \
        if parent.n_batches > 1 else np.array([n_linked])
    client.gather([client.submit(_slots, str(part(folder(base, "parents"), b)), int(totals[b]),
                                 partition_generator(seed, "counts", b), str(folder(base, "slots")), b, pure=False)
                   for b in range(parent.n_batches)])
    if n_linked == 0:
        return lookup_keys(client, schema, link, work, child, parent, str(folder(base, "none")), 0)
    sample = np.vstack([points for _, points in kids]) if kids else np.zeros((0, 1))
    assigned = solve_blocks(client, base, child.n_batches, parent.n_batches, n_linked, sample, seed, block_children,
                            progress)
    return lookup_keys(client, schema, link, work, child, parent, str(folder(base, assigned[0])), assigned[1])


def solve_blocks(client, base, n_children_parts: int, n_slot_parts: int, n_linked: int, sample, seed,
                 block_children: int = BLOCK_CHILDREN, progress=None) -> tuple[str, int]:
    """Match the children of ``base/children`` (parts of ``_pos`` and coordinates ``c0, c1...``) to the slots
    of ``base/slots`` (``_ppos`` and coordinates) at minimum total distance, in blocks on the workers, then
    repair the blocks' borders; returns the folder of ``base`` holding the pairs and its number of parts.

    Every block is solved with the block size and repair passes one machine uses for the whole link
    (:func:`relanon.multitable.linking.blocked_settings`), and with the minimum-cost flow only when one machine
    would run it on the whole link (:func:`relanon.multitable.linking.uses_flow`), so the work per child is the
    local engine's;
    the repairs re-solve only the small groups that straddle a border between blocks. ``progress(done, total)``
    is called as each block, then each group of a repair, is solved."""
    size, passes = linking.blocked_settings(n_linked)
    flow = linking.uses_flow(n_linked)
    n_blocks = math.ceil(n_linked / block_children)
    if n_blocks <= 1:
        gather_counted(client, [client.submit(_solve, str(folder(base, "children")), str(folder(base, "slots")), None,
                                              size, passes, flow, partition_generator(seed, "block", 0),
                                              str(folder(base, "assign-0")), pure=False)], progress, 0, 1)
        return "assign-0", 1
    total = n_blocks * (1 + REPAIR_PASSES)  # every repair cuts as many groups as there are blocks

    def from_(offset: int):
        return None if progress is None else lambda done, _: progress(offset + done, total)

    tree = blocks.CellTree(sample)
    for side, count in (("children", n_children_parts), ("slots", n_slot_parts)):
        _route(client, [str(part(folder(base, side), i)) for i in range(count)], tree, None, block_children,
               str(folder(base, f"blocks-{side}")))
    gather_counted(client, [client.submit(_solve, str(folder(base, "blocks-children")), str(folder(base, "blocks-slots")),
                                          g, size, passes, flow, partition_generator(seed, "block", g),
                                          str(folder(base, "assign-0")), pure=False)
                            for g in range(n_blocks)], from_(0))
    assigned = ("assign-0", n_blocks)
    for repair in range(REPAIR_PASSES):
        rotation = blocks.random_rotation(sample.shape[1], partition_generator(seed, "rotation", repair))
        assigned = _repair(client, base, assigned, n_linked, block_children, size, sample, rotation, repair, seed,
                           from_(n_blocks * (1 + repair)))
    return assigned


def _repair(client, base, assigned, n_linked, block_children, size, sample, rotation, repair, seed, progress=None):
    tree = blocks.CellTree(sample @ rotation)
    routed = str(folder(base, f"groups-{repair}"))
    paths = [str(part(folder(base, assigned[0]), i)) for i in range(assigned[1])]
    _route(client, paths, tree, rotation, block_children, routed)
    n_groups = math.ceil(n_linked / block_children)
    target = f"assign-{repair + 1}"
    gather_counted(client, [client.submit(_regroup, routed, g, size, partition_generator(seed, f"repair-{repair}", g),
                                          str(folder(base, target)), pure=False) for g in range(n_groups)],
                   progress, 0, n_groups)
    return target, n_groups


def _route(client, paths, tree, rotation, size, directory) -> None:
    """Rank the points of every part along the tree's cells (exactly, over all parts) and send each to the
    block or group of its rank."""
    counts = client.gather([client.submit(_cell_counts, p, tree, rotation, pure=False) for p in paths])
    offsets = blocks.rank_offsets(counts)
    client.gather([client.submit(_send, p, tree, rotation, offset, size, directory, i, pure=False)
                   for i, (p, offset) in enumerate(zip(paths, offsets, strict=True))])


# --------------------------------------------------------------------------- on the workers


def _coords(frame: pd.DataFrame, prefix: str) -> np.ndarray:
    names = [c for c in frame.columns if c.startswith(prefix) and c[len(prefix):].isdigit()]
    return frame[names].to_numpy(dtype=np.float64) if names else np.zeros((len(frame), 0))


def _with_coords(frame: pd.DataFrame, coords: np.ndarray, prefix: str) -> pd.DataFrame:
    columns = pd.DataFrame(coords, columns=[f"{prefix}{j}" for j in range(coords.shape[1])], index=frame.index)
    return pd.concat([frame, columns], axis=1)


def _children(path, space, columns, link, child: Released, directory, batch: int, share: float, rng):
    avatars = read_parts([path])
    side, has_parent = child_side(avatars, link, child, columns)
    coords = project(space, side[has_parent], columns)
    rows = _with_coords(pd.DataFrame({POS: avatars[POS].to_numpy()[has_parent]}), coords, "c")
    write(rows, directory, batch)
    sample = blocks.sample_rows(len(rows), share, rng)
    return len(rows), (coords[sample] if coords.shape[1] else np.zeros((len(sample), 1)))


def _count_bounds(client, paths: list[str], count: str, n_parents: int, k) -> tuple[float, float]:
    """The range the released numbers of children are kept in, as one machine computes it
    (:func:`relanon.multitable.linking.count_bounds` of every original parent's count): each parent batch
    sends its ``t`` smallest and largest counts, which hold the table's ``t``-th smallest and largest."""
    t = linking.count_rank(n_parents, k)
    if t <= 1:
        return -np.inf, np.inf
    tails = client.gather([client.submit(_count_tails, path, count, t, pure=False) for path in paths])
    smallest = np.sort(np.concatenate([low for low, _ in tails]))
    largest = np.sort(np.concatenate([high for _, high in tails]))
    return float(smallest[t - 1]), float(largest[len(largest) - t])


def _count_tails(path, count: str, t: int) -> tuple[np.ndarray, np.ndarray]:
    values = np.sort(np.maximum(np.nan_to_num(read_parts([path])[count].to_numpy(dtype=float)), 0.0))
    return values[:t], values[max(len(values) - t, 0):]


def _parents(batch_path, avatars_path, space, columns, count, k, offset, directory, batch: int,
             bounds=(-np.inf, np.inf)) -> float:
    original, avatars = read_parts([batch_path]), read_parts([avatars_path])
    coords = project(space, avatars, columns)
    # a number of children few parents have is not released as it is (relanon.multitable.linking.counts)
    expected = np.clip(avatars[count].to_numpy(dtype=float), *bounds)
    rows = pd.DataFrame({PARENT: np.arange(offset, offset + len(avatars), dtype=np.int64), "expected": expected})
    if space is not None and k is not None and len(original) >= 2:
        near = cross_neighbours(project(space, original, columns), coords, k=min(k, len(original)))
        candidates = np.clip(original[count].to_numpy(dtype=float)[near.indices], *bounds)
        rows = _with_coords(rows, candidates, "n")
    write(_with_coords(rows, coords, "c"), directory, batch)
    return float(np.nansum(np.maximum(expected, 0)))


def _slots(path, total: int, rng, directory, batch: int) -> int:
    parents = read_parts([path])
    candidates = _coords(parents, "n")
    counts = linking.allocate_counts(parents["expected"].to_numpy(), total,
                                     candidates=candidates if candidates.shape[1] else None, random_state=rng)
    repeated = np.repeat(np.arange(len(parents)), counts)
    slots = pd.DataFrame({PARENT: parents[PARENT].to_numpy()[repeated]})
    write(_with_coords(slots, _coords(parents, "c")[repeated], "c"), directory, batch)
    return len(slots)


def _cell_counts(path, tree, rotation) -> np.ndarray:
    points = _points(read_parts([path]), rotation)
    return blocks.cell_counts(tree.cells(points), tree.n_cells)


def _points(frame, rotation) -> np.ndarray:
    coords = _coords(frame, "c")
    if coords.shape[1] == 0:
        coords = np.zeros((len(frame), 1))
    return coords if rotation is None else coords @ rotation


def _send(path, tree, rotation, offsets, size: int, directory, index: int):
    frame = read_parts([path])
    rank = blocks.ranks(tree.cells(_points(frame, rotation)), offsets)
    return split_rows(frame, rank // size, directory, index)


def _solve(children_dir, slots_dir, group, size: int, passes: int, flow: bool, rng, directory) -> int:
    """One block (``group``; None: every child and slot) matched at minimum total distance, in the local
    engine's blocks of ``size`` children with ``passes`` repair passes, improved by the minimum-cost flow when
    ``flow``."""
    if group is None:
        children, slots = read_parts(parts_of(children_dir)), read_parts(parts_of(slots_dir))
        group = 0
    else:
        children, slots = gather_rows(children_dir, group), gather_rows(slots_dir, group)
    parents, inverse, counts = np.unique(slots[PARENT].to_numpy(), return_inverse=True, return_counts=True)
    slot_coords = _coords(slots, "c")
    parent_coords = np.zeros((len(parents), slot_coords.shape[1]))
    parent_coords[inverse.reshape(-1)] = slot_coords
    chosen = linking.match_linear_sum(_coords(children, "c"), parent_coords, counts, random_state=rng,
                                      block_size=size, repair_passes=passes, flow=flow)
    rows = pd.DataFrame({POS: children[POS].to_numpy(), PARENT: parents[chosen],
                         BLOCK: np.full(len(children), group, dtype=np.int64)})
    rows = _with_coords(rows, _coords(children, "c"), "c")
    write(_with_coords(rows, parent_coords[chosen], "p"), directory, group)
    return len(rows)


def _regroup(routed, group: int, size: int, rng, directory) -> int:
    """One group of a repair pass: its children that lie in small groups straddling a border between blocks
    re-solved with the slots they hold."""
    rows = gather_rows(routed, group)
    children, held = _coords(rows, "c"), _coords(rows, "p")
    slot = np.arange(len(rows))
    if len(rows) > 1 and children.shape[1]:  # without coordinates every slot is as good
        slot = linking.repair_borders(children, held, slot, rows[BLOCK].to_numpy(), width=BAND * size,
                                      passes=GROUP_PASSES, block_size=size, random_state=rng)
    out = pd.DataFrame({POS: rows[POS].to_numpy(), PARENT: rows[PARENT].to_numpy()[slot], BLOCK: rows[BLOCK].to_numpy()})
    out = _with_coords(out, children, "c")
    write(_with_coords(out, held[slot], "p"), directory, group)
    return len(out)
