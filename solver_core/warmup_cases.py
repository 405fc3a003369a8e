# SPDX-License-Identifier: GPL-3.0-or-later
"""The small cases the warm-up solves so that every kernel of every feature is compiled ahead of use.

Each takes a feature's code paths once: contact with planes, spheres and meshes, friction and other
cables; every clip kind, compliant clips; pre-formed cables; branched harnesses (free and fixed
junctions, a junction's weight, bundles and routed wires, the coarse start of long branches); each
``solver.model``; dynamics with the rod and with XPBD; a long cable's nested first solve. A feature
added to the solver needs its case here: tests/blender/test_extension_package.py counts the kernels
a first use of every feature compiles in an installed extension, and finds none.
"""

import copy

MATERIAL = {"E": 126e6, "nu": 0.3, "density": 7958.0}  # Lv 2017, Table 2
_FORMAT = "cable-harness-case/1"


def _held(position, tangent, normal=None):
    frame = {"position": list(position), "tangent": list(tangent)}
    if normal is not None:
        frame["normal"] = list(normal)
    return frame


BOX = {
    "type": "mesh",
    "vertices": [[x, y, z] for x in (0.1, 0.2) for y in (-0.05, 0.05) for z in (-0.19, -0.15)],
    "triangles": [
        [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
        [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],
    ],
}  # fmt: skip

# contact with every obstacle kind, friction, fixed and sliding clips, cable-cable contact, a step
CONTACT = {
    "format": _FORMAT,
    "cables": [
        {
            "id": "clamped",
            "length": 0.42,
            "diameter": 0.004,
            "material": MATERIAL,
            "segments": 24,
            "start": _held([0.0, 0.0, 0.0], [1, 0, 0], [0, 0, 1]),
            "end": _held([0.3, 0.0, 0.0], [1, 0, 0]),
            "clips": [
                {"s": 0.12, "kind": "fixed", "length": 0.01, "frame": _held([0.08, 0, -0.05], [1, 0, 0])},
                {"s": 0.3, "kind": "sliding", "frame": _held([0.22, 0, -0.05], [1, 0, 0])},
            ],
        },
        {
            "id": "free",
            "length": 0.25,
            "diameter": 0.004,
            "material": {"preset": "lv2017_harness"},
            "segments": 16,
            "start": _held([0.15, -0.1, 0.02], [0, 1, 0]),
            "end": None,
        },
    ],
    "obstacles": [
        {"type": "plane", "point": [0, 0, -0.2], "normal": [0, 0, 1]},
        {"type": "sphere", "center": [0.25, 0.1, -0.15], "radius": 0.03},
        BOX,
    ],
    "contact": {"friction_static": 0.3, "friction_dynamic": 0.2, "cable_cable": True},
    "steps": [{"cables": {"clamped": {"end": _held([0.28, 0.02, 0.0], [1, 0, 0])}}}],
}

# the Newton solver's kernels without any contact kernel: one clamped cable, no obstacles
BARE = {
    "format": _FORMAT,
    "cables": [{**CONTACT["cables"][0], "clips": []}],
    "steps": [{"cables": {"clamped": {"end": _held([0.28, 0.02, 0.0], [1, 0, 0])}}}],
}

# two cables pressed across each other (the coupling beside the band), rotating and compliant clips
PRESSED = {
    "format": _FORMAT,
    "cables": [
        {
            "id": "under",
            "length": 0.34,
            "diameter": 0.004,
            "material": MATERIAL,
            "segments": 20,
            "start": _held([0.0, 0.0, 0.0], [1, 0, 0], [0, 0, 1]),
            "end": _held([0.3, 0.0, 0.0], [1, 0, 0]),
            "clips": [
                {"s": 0.08, "kind": "rotating", "length": 0.01, "frame": _held([0.07, 0, -0.02], [1, 0, 0])},
                {
                    "s": 0.26,
                    "kind": "fixed",
                    "length": 0.01,
                    "frame": _held([0.23, 0, -0.02], [1, 0, 0]),
                    "stiffness": {"translational": 3000.0, "rotational": 2.0},
                },
            ],
        },
        {
            "id": "over",
            "length": 0.3,
            "diameter": 0.004,
            "material": MATERIAL,
            "segments": 20,
            "start": _held([0.15, -0.12, 0.0], [0, 1, 0], [0, 0, 1]),
            "end": _held([0.15, 0.12, 0.0], [0, 1, 0]),
        },
    ],
    "contact": {"cable_cable": True},
    "steps": [{"cables": {"over": {"start": _held([0.15, -0.12, -0.01], [0, 1, 0], [0, 0, 1])}}}],
}

# pre-formed cables: a constant Darboux vector, and an unstressed route
PREFORMED = {
    "format": _FORMAT,
    "cables": [
        {
            "id": "coiled",
            "length": 0.2,
            "diameter": 0.004,
            "material": MATERIAL,
            "segments": 16,
            "start": _held([0.0, 0.0, 0.0], [1, 0, 0], [0, 0, 1]),
            "end": None,
            "rest": {"curvature": [0.0, 5.0], "twist": 1.0},
        },
        {
            "id": "moulded",
            "length": 0.2,
            "diameter": 0.004,
            "material": MATERIAL,
            "segments": 16,
            "start": _held([0.0, 0.1, 0.0], [1, 0, 0], [0, 0, 1]),
            "end": _held([0.15, 0.15, 0.0], [0, 1, 0]),
            "rest": {"route": [[0.0, 0.1, 0.0], [0.1, 0.1, 0.0], [0.1, 0.2, 0.0]]},
        },
    ],
}


def _wire(wire_id=None, count=3):
    wire = {"diameter": 0.0012, "material": {"preset": "pvc_wire"}, "count": count}
    if wire_id:
        wire["id"] = wire_id
    return wire


def _branch(cid, start, end, length, segments, wires=None):
    doc = {"id": cid, "length": length, "segments": segments, "start": start, "end": end}
    if wires:
        doc["bundle"] = {"wires": wires, "wrap": "taped"}
    else:
        doc.update(diameter=0.004, material=MATERIAL)
    return doc


def _harness(segments):
    """A trunk from a connector to a free junction of some weight, two branches to connectors, one
    of them on to a fixed junction and a connector beyond; bundles with a routed wire; over a floor."""
    return {
        "format": _FORMAT,
        "cables": [
            _branch(
                "trunk",
                _held([0.0, 0.0, 0.0], [1, 0, 0], [0, 0, 1]),
                {"junction": "J1", "outlet": [1.0, 0.0, 0.0]},
                0.26,
                segments,
                [_wire("W1"), _wire(count=2)],
            ),
            _branch(
                "left",
                {"junction": "J1", "outlet": [0.8, 0.6, 0.0]},
                _held([0.45, 0.15, 0.0], [1, 0, 0]),
                0.27,
                segments,
                [_wire("W1")],
            ),
            _branch(
                "right",
                {"junction": "J1", "outlet": [0.8, -0.6, 0.0]},
                {"junction": "J2", "outlet": [-1.0, 0.0, 0.0]},
                0.27,
                segments,
            ),
            _branch(
                "tail",
                {"junction": "J2", "outlet": [1.0, 0.0, 0.0]},
                _held([0.6, -0.15, 0.0], [1, 0, 0]),
                0.16,
                segments,
            ),
        ],
        "junctions": [
            {"id": "J1", "position": [0.25, 0.0, 0.0], "mass": 0.01},
            {"id": "J2", "position": [0.45, -0.15, 0.0], "fixed": True},
        ],
        "obstacles": [{"type": "plane", "point": [0, 0, -0.3], "normal": [0, 0, 1]}],
        "steps": [
            {"cables": {"left": {"end": _held([0.45, 0.16, 0.0], [1, 0, 0])}}},
            {"junctions": {"J2": {"position": [0.45, -0.15, 0.01]}}},
        ],
    }


HARNESS = _harness(12)
HARNESS_LONG = _harness(30)  # started from the same harness on coarse branches (coarse_harness.py)

# a cable long enough that its first solve starts from its solve on fewer segments
LONG = {
    "format": _FORMAT,
    "cables": [{**copy.deepcopy(BARE["cables"][0]), "segments": 300}],
}

# the other models' kernels (solver.model): a short cantilever and one step, for each of them
CANTILEVER = {
    "format": _FORMAT,
    "cables": [
        {
            "id": "cantilever",
            "length": 0.2,
            "diameter": 0.004,
            "material": MATERIAL,
            "segments": 8,
            "start": _held([0.0, 0.0, 0.0], [1, 0, 0], [0, 0, 1]),
            "end": None,
        }
    ],
    "steps": [{"cables": {"cantilever": {"start": _held([0.0, 0.0, 0.01], [1, 0, 0])}}}],
}
OTHER_MODELS = ("cosserat_pbd", "kirchhoff_cg", "mass_spring")
# each model with dynamics: a step as a motion in time
DYNAMIC_MODELS = ("cosserat", "cosserat_pbd")


def model_case(model: str) -> dict:
    return {**copy.deepcopy(CANTILEVER), "solver": {"model": model}}


def dynamic_case(model: str) -> dict:
    case = model_case(model)
    case["solver"]["dynamics"] = {"time_step": 0.004, "damping": 1.0}
    case["steps"][0]["duration"] = 0.02
    return case


def chain_on_a_floor() -> dict:
    """The mass-spring chain's contact kernels: the cantilever sagging onto a floor."""
    case = model_case("mass_spring")
    case["obstacles"] = [{"type": "plane", "point": [0.0, 0.0, -0.005], "normal": [0.0, 0.0, 1.0]}]
    return case


def helper_cases() -> list:
    """(name, case) of the features whose kernels are their own (the other models, XPBD dynamics):
    the warm-up's helper process compiles them while the main one compiles the Newton solver."""
    cases = [(f"model {m}", model_case(m)) for m in OTHER_MODELS] + [
        ("model mass_spring on a floor", chain_on_a_floor()),
        ("dynamics cosserat_pbd", dynamic_case("cosserat_pbd")),
    ]
    return [(name, copy.deepcopy(case)) for name, case in cases]


def feature_cases() -> list:
    """(name, case) of every feature after the contact case, in the order the warm-up solves them."""
    cases = [("pressed cables and compliant clips", PRESSED), ("pre-formed cables", PREFORMED)]
    cases += [("branched harness", HARNESS), ("branched harness, coarse start", HARNESS_LONG), ("long cable", LONG)]
    cases += [(f"model {m}", model_case(m)) for m in OTHER_MODELS]
    cases += [("model mass_spring on a floor", chain_on_a_floor())]
    cases += [(f"dynamics {m}", dynamic_case(m)) for m in DYNAMIC_MODELS]
    return [(name, copy.deepcopy(case)) for name, case in cases]
