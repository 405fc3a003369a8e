# SPDX-License-Identifier: GPL-3.0-or-later
"""Per-point physics of solved cables as attributes of a companion mesh, "<cable> Physics".

A legacy Curve object has no generic attributes, so Geometry Nodes and materials cannot read
anything per point from the cable itself. The companion holds one vertex per node (world positions)
and one edge per segment, with the FLOAT point attributes of overlay_data.point_physics: curvature
(1/m), tension (N), twist_rate (rad/m) and bend_utilisation. A Geometry Nodes setup reads it with
Object Info, Mesh to Curve and Curve to Mesh, and a material with an Attribute node. It shows the
last solve (Solve or Simulate), is not rendered and is found again by name and a mark.
"""

import bpy
import numpy as np

from . import overlay_data

SUFFIX = " Physics"
MARK = "cable_harness_physics_of"  # the companion's custom property: the cable's name


def companion(ob, create: bool = False):
    """The companion mesh object of cable ``ob`` (made, next to the cable, when ``create``)."""
    name = ob.name + SUFFIX
    found = bpy.data.objects.get(name)
    if found is not None and found.type == "MESH" and found.get(MARK) == ob.name:
        return found
    if not create:
        return None
    mesh = bpy.data.meshes.new(name)
    made = bpy.data.objects.new(name, mesh)
    made[MARK] = ob.name
    made.hide_render = True
    for collection in ob.users_collection or (bpy.context.scene.collection,):
        collection.objects.link(made)
    return made


def _is_companion(ob) -> bool:
    """Made by companion(): a mesh marked with its cable's name and named after it. A copy the user
    made (Shift+D keeps the mark, not the name) or their own "<name> Physics" is not."""
    mark = ob.get(MARK)
    return ob.type == "MESH" and isinstance(mark, str) and ob.name == mark + SUFFIX


def _remove(made) -> None:
    mesh = made.data
    bpy.data.objects.remove(made)
    if mesh is not None and mesh.users == 0:  # the mesh goes too, unless the user uses it elsewhere
        bpy.data.meshes.remove(mesh)


def remove_companion(ob) -> None:
    """Remove cable ``ob``'s companion, if it has one: with the option off it would show an old solve."""
    made = companion(ob)
    if made is not None:
        _remove(made)


def remove_companions(scene) -> None:
    """Remove every companion in ``scene``, also those whose cable was renamed or deleted since."""
    for made in [ob for ob in scene.objects if _is_companion(ob)]:
        _remove(made)


def write_point_attributes(ob, result: dict, scale: float, utilisation, converged: bool) -> None:
    """Write cable ``ob``'s solved centre line and its per-point physics into its companion
    (``utilisation``: the overlay's bend utilisation per node)."""
    made = companion(ob, create=True)
    mesh = made.data
    points = np.asarray(result["nodes"], dtype=np.float64) / scale
    n = len(points)
    if len(mesh.vertices) != n or len(mesh.edges) != n - 1:
        mesh.clear_geometry()
        mesh.vertices.add(n)
        mesh.edges.add(n - 1)
        ends = np.column_stack((np.arange(n - 1), np.arange(1, n))).astype(np.int32)
        mesh.edges.foreach_set("vertices", ends.ravel())
    M = np.array(made.matrix_world)
    local = (np.linalg.inv(M) @ np.column_stack((points, np.ones(n))).T).T[:, :3]
    mesh.vertices.foreach_set("co", local.astype(np.float32).ravel())
    for name, values in overlay_data.point_physics(result, utilisation).items():
        attribute = mesh.attributes.get(name)
        if attribute is not None and (attribute.domain != "POINT" or attribute.data_type != "FLOAT"):
            mesh.attributes.remove(attribute)
            attribute = None
        if attribute is None:
            attribute = mesh.attributes.new(name, "FLOAT", "POINT")
        attribute.data.foreach_set("value", values)
    made["converged"] = bool(converged)
    mesh.update()
