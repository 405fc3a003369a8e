# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether two branches of one harness pass through each other away from the junction they share.

Branches meeting at a junction are no contact obstacles to each other (they overlap where they leave
it), so nothing in their solve keeps them apart elsewhere either: a state where they cut through each
other is no physical equilibrium and must not be called converged. Near a shared junction two
branches leaving at an angle theta overlap over (r_a + r_b) / sin(theta / 2) of their length; that
stretch (and one segment more) is left out of the test.
"""

import numpy as np

from .contact_geometry import nodes_within

MIN_HALF_ANGLE_SINE = 0.05  # outlets closer than ~6 degrees run together: their overlap is capped
MAX_OVERLAP_FRACTION = 0.25  # of the shorter branch


def segment_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Smallest distance between every segment of polyline ``a`` (n+1, 3) and every one of ``b``
    (m+1, 3): (n, m), exact (clamped closest points of two segments, Ericson 2005, Sec. 5.1.9)."""
    p, d1 = a[:-1, None, :], (a[1:] - a[:-1])[:, None, :]
    q, d2 = b[None, :-1, :], (b[1:] - b[:-1])[None, :, :]
    r = p - q
    aa = np.einsum("ijk,ijk->ij", d1, d1) + np.zeros((a.shape[0] - 1, b.shape[0] - 1))
    ee = np.einsum("ijk,ijk->ij", d2, d2) + np.zeros_like(aa)
    ff = np.einsum("ijk,ijk->ij", d2, r)
    cc = np.einsum("ijk,ijk->ij", d1, r)
    bb = np.einsum("ijk,ijk->ij", d1, d2)
    denom = aa * ee - bb * bb
    safe = np.where(denom > 1e-300, denom, 1.0)
    s = np.where(denom > 1e-12 * aa * ee, np.clip((bb * ff - cc * ee) / safe, 0.0, 1.0), 0.0)
    t = (bb * s + ff) / np.where(ee > 0.0, ee, 1.0)
    s = np.where(t < 0.0, np.clip(-cc / np.where(aa > 0.0, aa, 1.0), 0.0, 1.0), s)
    s = np.where(t > 1.0, np.clip((bb - cc) / np.where(aa > 0.0, aa, 1.0), 0.0, 1.0), s)
    t = np.clip(t, 0.0, 1.0)
    gap = p + s[..., None] * d1 - q - t[..., None] * d2
    return np.sqrt(np.einsum("ijk,ijk->ij", gap, gap))


def _away_from(nodes: np.ndarray, arc: np.ndarray, side: str, overlap: float) -> np.ndarray:
    """The nodes of a branch more than ``overlap`` of arc length from its ``side`` end."""
    keep = arc > overlap if side == "start" else arc < arc[-1] - overlap
    return nodes[keep]


def crossing(branch_a, branch_b, shared) -> float | None:
    """How deep two branches cut into each other (m) away from their shared junctions, or None.

    ``branch_*``: (nodes (n, 3) world, arc lengths (n,), radius, its longest segment); ``shared``: per
    junction they share, (side of a, side of b, sine of half the angle between their outlets)."""
    (xa, sa, ra, longest_a), (xb, sb, rb, longest_b) = branch_a, branch_b
    seg = max(longest_a, longest_b)
    for side_a, side_b, half_sine in shared:
        overlap = min((ra + rb) / max(half_sine, MIN_HALF_ANGLE_SINE), MAX_OVERLAP_FRACTION * min(sa[-1], sb[-1]))
        keep_a = _away_from(np.arange(len(sa)), sa, side_a, overlap + seg)
        keep_b = _away_from(np.arange(len(sb)), sb, side_b, overlap + seg)
        xa, sa = xa[keep_a], sa[keep_a]
        xb, sb = xb[keep_b], sb[keep_b]
    if len(xa) < 2 or len(xb) < 2 or not nodes_within(xa, xb, ra + rb + seg):
        return None
    depth = ra + rb - float(segment_distances(xa, xb).min())
    return depth if depth > 0.01 * min(ra, rb) else None
