# SPDX-License-Identifier: GPL-3.0-or-later
"""The physics in the viewport: cables coloured by how much of their allowed bend they use, force
arrows at connectors and clips, contact points, and failed cables in red with a dashed line to the
connector they should reach (a GPU draw handler, toggled by Show Physics in the panel); and the
envelope of a variation study's shapes (toggled by Show Envelope).

What is drawn is computed when a solve writes its result (``update``, from overlay_data), not per
redraw; the handler only hands the arrays to the GPU. Nothing is drawn in a Blender without a window.
"""

import bpy
import numpy as np

from .overlay_data import ARROW, CONTACT, RAMP

_shown = {}  # cable object name -> overlay_data.cable_overlay(...)
_envelopes = {}  # cable object name -> line-segment end points of a study's shapes (world, Blender units)
_handlers = []
ENVELOPE = (0.35, 0.8, 1.0, 0.35)


def update(name: str, overlay: dict) -> None:
    _shown[name] = overlay
    tag_redraw()


def shown(name: str) -> dict | None:
    return _shown.get(name)


def forget(name: str) -> None:
    _shown.pop(name, None)


def show_envelope(name: str, segments) -> None:
    _envelopes[name] = segments
    tag_redraw()


def envelope(name: str):
    return _envelopes.get(name)


def clear_envelopes() -> None:
    _envelopes.clear()
    tag_redraw()


def tag_redraw() -> None:
    wm = getattr(bpy.context, "window_manager", None)
    for window in getattr(wm, "windows", []):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def _enabled(context) -> bool:
    scene = getattr(context, "scene", None)
    return scene is not None and scene.cable_harness.show_physics


def _draw_lines(shader, points, colours, width):
    import gpu
    from gpu_extras.batch import batch_for_shader

    if len(points) < 2:
        return
    shader.uniform_float("viewportSize", gpu.state.viewport_get()[2:])
    shader.uniform_float("lineWidth", width)
    batch = batch_for_shader(shader, "LINES", {"pos": points.tolist(), "color": colours.tolist()})
    batch.draw(shader)


def _draw_envelopes(shader):
    for name, segments in list(_envelopes.items()):
        if bpy.data.objects.get(name) is None:
            _envelopes.pop(name, None)
            continue
        _draw_lines(shader, segments, np.tile(ENVELOPE, (len(segments), 1)), 1.5)


def _draw_view():
    context = bpy.context
    scene = getattr(context, "scene", None)
    envelopes = bool(_envelopes) and scene is not None and scene.cable_harness.show_envelope
    if not envelopes and not (_enabled(context) and _shown):
        return
    import gpu

    shader = gpu.shader.from_builtin("POLYLINE_SMOOTH_COLOR")
    if envelopes:
        gpu.state.blend_set("ALPHA")
        _draw_envelopes(shader)
    if not (_enabled(context) and _shown):
        gpu.state.blend_set("NONE")
        return
    gpu.state.depth_test_set("NONE")  # over the bevelled curve, which would hide a centre line
    gpu.state.blend_set("ALPHA")
    for name, overlay in list(_shown.items()):
        if bpy.data.objects.get(name) is None:
            _shown.pop(name, None)
            continue
        points, colours = overlay["points"], overlay["colours"]
        segments = np.repeat(np.arange(len(points)), 2)[1:-1]
        _draw_lines(shader, points[segments], colours[segments], 4.0)
        arrows = overlay["arrows"]
        _draw_lines(shader, arrows, np.tile(ARROW, (len(arrows), 1)), 2.5)
        gap = overlay["gap"]
        _draw_lines(shader, gap, np.tile((1.0, 0.1, 0.1, 1.0), (len(gap), 1)), 2.5)
        contacts = overlay["contacts"]
        if len(contacts):
            from gpu_extras.batch import batch_for_shader

            dots = gpu.shader.from_builtin("UNIFORM_COLOR")
            gpu.state.point_size_set(7.0)
            batch = batch_for_shader(dots, "POINTS", {"pos": contacts.tolist()})
            dots.uniform_float("color", CONTACT)
            batch.draw(dots)
    gpu.state.depth_test_set("LESS_EQUAL")
    gpu.state.blend_set("NONE")


def legend_lines(per_newton: str) -> list:
    """The legend's text lines (what the colours and arrows mean); ``per_newton`` the arrow length
    of one newton, as text in the scene's unit."""
    stops = ", ".join(f"{s:g}" for s, _ in RAMP)
    return [
        f"Cable colour: allowed bend radius / bend radius (blue-green-yellow-red at {stops}; red: over the limit)",
        f"Orange arrows: force on each connector and clip, {per_newton} per N",
        "Magenta dots: contacts. Red cable, dashed line: not converged (held state, no arrows, and where it "
        "should reach)",
    ]


def _draw_legend():
    context = bpy.context
    if not _enabled(context) or not _shown:
        return
    import blf

    scene = context.scene
    per_newton = bpy.utils.units.to_string(
        scene.unit_settings.system,
        "LENGTH",
        scene.cable_harness.arrow_length_per_newton * scene.unit_settings.scale_length,
    )
    for k, line in enumerate(reversed(legend_lines(per_newton))):
        blf.size(0, 12)
        blf.position(0, 20, 30 + 16 * k, 0)
        blf.color(0, 1.0, 1.0, 1.0, 0.9)
        blf.draw(0, line)


def register():
    _handlers.append(bpy.types.SpaceView3D.draw_handler_add(_draw_view, (), "WINDOW", "POST_VIEW"))
    _handlers.append(bpy.types.SpaceView3D.draw_handler_add(_draw_legend, (), "WINDOW", "POST_PIXEL"))


def unregister():
    for handler in _handlers:
        bpy.types.SpaceView3D.draw_handler_remove(handler, "WINDOW")
    _handlers.clear()
    _shown.clear()
    _envelopes.clear()
