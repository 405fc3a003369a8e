# SPDX-License-Identifier: GPL-3.0-or-later
"""The sidebar panel at its default width: notes wrapped into labels that fit, list rows with the name
first and the values in columns (drawn headlessly into a layout that records what is drawn)."""

import sys

import bpy
import pytest
from helpers.blender_scenes import RecordingLayout, simple_harness

LONG_NOTE = (
    "cable 'Cable': clip 1 'Clip' at Arc Length 0.643358 m (clip Length 0.01 m) lies outside the cable, "
    "0 to 0.428906 m; set its Arc Length in the Clips list within the cable, or lengthen the cable; "
    "an_unbroken_word_longer_than_any_line_of_the_sidebar"
)


def _ui(extension):
    return sys.modules[f"{extension.__name__}.cable_harness.ui"]


@pytest.mark.parametrize("width,scale", [(None, 1.0), (220, 1.0), (440, 2.0), (600, 1.0), (90, 1.0)])
def test_wrapped_lines_fit_the_width_and_keep_every_character(extension, width, scale):
    ui = _ui(extension)
    chars = ui.line_chars(width, scale)
    assert chars >= ui.MIN_LINE_CHARS
    if width in (None, 220):  # the default sidebar: "NOT converged: the va..." was where a label was cut
        assert chars <= 22
    lines = ui.wrap_lines(LONG_NOTE, chars)
    assert len(lines) > 1 and all(len(line) <= chars for line in lines)
    assert "".join(lines).replace(" ", "") == LONG_NOTE.replace(" ", "")
    assert ui.line_chars(2 * (width or 220), scale) >= chars  # wider: no fewer per line


def test_the_panel_wraps_a_long_failure_note_within_the_default_width(extension):
    *_, cable = simple_harness()
    s = cable.cable_harness
    s.result_valid, s.result_converged, s.result_message = True, False, LONG_NOTE
    drawn = []
    bpy.types.VIEW3D_PT_cable_harness._draw_cable(RecordingLayout(drawn), s)
    labels = [entry[1] for entry in drawn if entry[0] == "label"]
    chars = _ui(extension).line_chars(None)
    assert all(len(text) <= chars for text in labels), [t for t in labels if len(t) > chars]
    shown = "".join(labels).replace(" ", "")
    assert LONG_NOTE.replace(" ", "") in shown
    assert "NOTconverged:thevaluesbelowareofthelastgoodstate" in shown


def _row(list_type, data, item):
    drawn = []
    getattr(bpy.types, list_type).draw_item(None, bpy.context, RecordingLayout(drawn), data, item, 0, data, "", 0)
    return drawn


def test_a_clip_row_has_the_clip_first_and_its_arc_length_in_a_column_of_its_own(extension):
    *_, cable = simple_harness()
    s = cable.cable_harness
    drawn = _row("CABLE_HARNESS_UL_clips", s, s.clips[0])
    assert drawn[0][0] == "split" and 0.3 <= drawn[0][1] <= 0.6
    # the clip's name as text first: as a picker, its icon and clear button took the whole column
    # at the default sidebar width and no name showed (docs/panel.png)
    assert [entry for entry in drawn if entry[0] in ("prop", "label")][0] == ("label", s.clips[0].clip.name)
    props = [entry[1:] for entry in drawn if entry[0] == "prop"]
    assert ("s", "") in props and ("clip", "") not in props  # the value alone: named above the list
    labels = []
    bpy.types.VIEW3D_PT_cable_harness._draw_cable(RecordingLayout(labels), s)
    assert ("label", "Arc Length") in labels and ("label", "Clip") in labels
    assert ("prop", "clip", "Selected Clip") in labels  # the selected row's clip is chosen below


def test_a_wire_row_has_its_id_first_and_fits_count_and_diameter(extension):
    *_, cable = simple_harness(with_clip=False)
    s = cable.cable_harness
    s.is_bundle = True
    wire = s.wires.add()
    wire.wire_id, wire.count, wire.diameter = "W1", 7, 0.0016
    drawn = _row("CABLE_HARNESS_UL_wires", s, wire)
    assert drawn[0][0] == "split"
    # the count's column narrower than the diameter's, which was cut to "1." at the default width
    assert [entry for entry in drawn if entry[0] == "split"][1][1] < 0.5
    props = [entry[1:] for entry in drawn if entry[0] == "prop"]
    assert props == [("wire_id", ""), ("count", ""), ("diameter", "")]
    assert not [entry for entry in drawn if entry[0] == "label"]  # no "x" squeezed between the values
    panel = []
    bpy.types.VIEW3D_PT_cable_harness._draw_cable(RecordingLayout(panel), s)
    assert ("prop", "material", "Wire Material") in panel  # the selected wire's, below the list
    assert {("label", "ID"), ("label", "Count"), ("label", "Diameter")} <= set(panel)
