# SPDX-License-Identifier: GPL-3.0-or-later
"""Contact of a cable with obstacles and other cables, inside the energy minimisation.

Obstacles: planes (the smooth-plane unilateral constraint of Jin 2016), spheres, triangles (meshes,
open or closed, with a BVH) and capsules (segments of other cables, frozen while this cable is
solved); self-contact pairs meet the cable's own segments, both sides moving. The cable's centre
line must keep a distance of at least its radius (plus the primitive's radius) from every primitive.

Normal contact is a penalty E = k/2 max(0, r - d)^2 per pair. Pairs are nodes against primitives
(planes, triangles, other cables' segments), which carries faces smoothly; segments against spheres;
segments against the mesh edges they could cut between their nodes (sharp, open or folded edges,
TRI_EDGE): the distance between two segments, a sum of smooth terms as in IPC's edge-edge pairs (Li
et al. 2020), so that a cable cannot slip through a thin plate or over an edge between nodes, and a
coarse segment cannot cut a tessellated curve; and segments against other cables' segments where
their closest point lies inside the segment, carrying only what reaches beyond their deeper node,
k/2 (D_s^2 - D_n^2). The force is compressive and vanishes with a gap, the complementarity
conditions of Jin 2016, Eqs. 9-12; the stiffness k = E_c l (a line contact over the segment length
l) is raised until the penetration is below a set fraction of the radius. The Hessian is k J^T J
plus the curvature of node distances (left out of the Gauss-Newton matrix).

Friction is lumped at nodes: E = mu N phi(|P (x - a)|) with the lagged normal force N and contact
normal (P projects on the tangent plane), the anchor a where the node stuck, and phi the Huber
function (quadratic below the stick width eps, linear beyond): the Coulomb force mu N once the node
slides (Lv 2017, Eqs. 32-36: static mu_s while sticking, dynamic mu_d once sliding).

The pieces: obstacles.py (the obstacles as arrays), pair_search.py (candidate pairs), pair_geometry.py
(one pair's distance and normal), contact_energy.py (energies, gradients, Hessians), step_limits.py
(how far a step may go near contacts). This module holds the pair kinds and tolerances they share.
"""

# Pair kinds. Node pairs carry faces and side-by-side cables smoothly; segment pairs only count
# where a feature (a plate edge, a fold, a crossing cable) reaches between two nodes. TRI_SEG: a
# segment piercing a face (a start drawn through a plate); TRI_EDGE: a segment against a mesh edge
# (primitive 3 * triangle + edge).
PLANE, SPHERE, TRI_NODE, TRI_SEG, CAP_NODE, CAP_SEG, SELF_NODE, SELF_SEG, TRI_EDGE = 0, 1, 2, 3, 4, 5, 6, 7, 8
PAIR_KINDS = (PLANE, SPHERE, TRI_NODE, TRI_SEG, CAP_NODE, CAP_SEG, SELF_NODE, SELF_SEG, TRI_EDGE)
NODE_KINDS = (PLANE, TRI_NODE, CAP_NODE, SELF_NODE)
SELF_KINDS = (SELF_NODE, SELF_SEG)
END_POWER = 32.0  # the power mean of a segment pair's end depths: within 4 % below their maximum
INTERIOR = 1e-3  # a facet or capsule segment pair's closest point must lie this far inside the segment
# Penetration allowed at convergence, as a fraction of the cable radius: the contact stiffness is
# raised tenfold (up to three times) until the solution stays within it
# (equilibrium._minimise_with_interactions)
PENETRATION_TOLERANCE = 0.005
# A mesh edge whose fold a straight segment could cut deeper than this fraction of the radius between
# its nodes gets segment pairs (TRI_EDGE; the accuracy promised for converged results). At half of it
# (the penetration tolerance) a gently wavy 200k-triangle mesh under a 100-segment cable got them on
# every edge, and a step cost 7.4 ms instead of 5.0.
FOLD_CUT_TOLERANCE = 0.01
# No Newton step sinks an obstacle pair (planes excepted) deeper than this fraction of the radius, or
# than it was before the step if it was deeper (step_limits.depth_limit, step_limits.is_depth_limited).
ITERATE_PENETRATION = 0.01
MIN_SEPARATION = 0.5  # radii between a centre line and a surface that no step may cross (approach_fraction)
CABLE_SEGMENT_APPROACH = 0.1  # radii a step may carry a segment across another cable's (approach_fraction)
