# SPDX-License-Identifier: GPL-3.0-or-later
"""Every feature of the extension used once, through its operators, as a user's first session does.

``run_tour(bpy, module)`` runs each feature in a fresh scene of the Blender it is given (the installed
extension enabled as ``module``) and returns, per feature, the seconds its first use took, the kernels
this process compiled meanwhile and a fingerprint of what it made (every cable's curve in metres,
junctions' places, the study's numbers). tools/extension_probe.py runs it in a Blender without SciPy
and in one with, so that the two can be compared; benchmarks/bench_extension_start.py prints its
times. No solver import here: the installed extension's own modules are looked up by name.
"""

import copy
import json
import math
import sys
import tempfile
import time
from pathlib import Path

WIRE = {"E": 126e6, "nu": 0.3, "density": 7958.0}  # Lv 2017, Table 2


def _cable(cid, start, end, length, segments=24, **extra):
    doc = {
        "id": cid,
        "length": length,
        "diameter": 0.004,
        "material": dict(WIRE),
        "segments": segments,
        "start": {"position": list(start), "tangent": [1.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        "end": None if end is None else {"position": list(end), "tangent": [1.0, 0.0, 0.0]},
    }
    doc.update(copy.deepcopy(extra))
    return doc


def _case(*cables, **extra):
    doc = {"format": "cable-harness-case/1", "gravity": [0.0, 0.0, -9.81], "cables": list(cables)}
    doc.update(copy.deepcopy(extra))
    return doc


def _clip(s, kind, x, z, **extra):
    return {"s": s, "kind": kind, "frame": {"position": [x, 0.0, z], "tangent": [1.0, 0.0, 0.0]}, **extra}


CLIPS = _case(
    _cable(
        "clipped",
        (0.0, 0.0, 0.0),
        (0.5, 0.0, 0.0),
        0.62,
        segments=40,
        clips=[
            _clip(0.12, "fixed", 0.1, -0.04, length=0.01),
            _clip(0.25, "rotating", 0.2, -0.05, length=0.01),
            _clip(0.37, "sliding", 0.3, -0.05),
            _clip(0.5, "fixed", 0.4, -0.04, length=0.01, stiffness={"translational": 2000.0, "rotational": 1.0}),
        ],
    )
)
_BOX = {
    "type": "mesh",
    "name": "box",
    "vertices": [[x, y, z] for x in (0.1, 0.2) for y in (-0.05, 0.05) for z in (-0.19, -0.06)],
    "triangles": [
        [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
        [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],
    ],
}  # fmt: skip
COLLIDER = _case(_cable("draped", (0.0, 0.0, 0.0), (0.3, 0.0, 0.0), 0.42, segments=30), obstacles=[_BOX])
CROSSING = _case(
    _cable("lower", (0.0, 0.0, 0.0), (0.3, 0.0, 0.0), 0.36, segments=24),
    {
        **_cable("upper", (0.15, -0.15, 0.02), (0.15, 0.15, 0.02), 0.4, segments=24),
        "start": {"position": [0.15, -0.15, 0.02], "tangent": [0.0, 1.0, 0.0], "normal": [0.0, 0.0, 1.0]},
        "end": {"position": [0.15, 0.15, 0.02], "tangent": [0.0, 1.0, 0.0]},
    },
    contact={"cable_cable": True},
)
JUNCTIONS = _case(
    {
        **_cable("trunk", (0.0, 0.0, 0.0), None, 0.27, segments=20),
        "end": {"junction": "J1", "outlet": [1.0, 0.0, 0.0]},
    },
    {
        **_cable("left", (0.0, 0.0, 0.0), (0.45, 0.15, 0.0), 0.27, segments=20),
        "start": {"junction": "J1", "outlet": [0.8, 0.6, 0.0]},
    },
    {
        **_cable("right", (0.0, 0.0, 0.0), (0.45, -0.15, 0.0), 0.27, segments=20),
        "start": {"junction": "J1", "outlet": [0.8, -0.6, 0.0]},
    },
    junctions=[{"id": "J1", "position": [0.25, 0.0, 0.0]}],
)
BUNDLE = _case(
    {
        **_cable("bundle", (0.0, 0.0, 0.0), (0.3, 0.0, 0.0), 0.36, segments=24),
        "bundle": {
            "wires": [
                {"diameter": 0.0016, "material": {"preset": "pvc_wire"}, "count": 7},
                {"diameter": 0.001, "material": dict(WIRE), "count": 4},
            ],
            "wrap": "taped",
            "sheath": 0.0003,
        },
    }
)
for _doc in BUNDLE["cables"]:
    del _doc["diameter"], _doc["material"]
REST_SHAPE = _case(
    _cable(
        "preformed",
        (0.0, 0.0, 0.0),
        None,
        0.3,
        segments=30,
        rest={"route": [[0.0, 0.0, 0.0], [0.15, 0.0, 0.0], [0.15 + 0.15 / math.sqrt(2), 0.15 / math.sqrt(2), 0.0]]},
    )
)


def _ext(module, name):
    return sys.modules[f"{module}.{name}"]


def _fresh(bpy, unit_scale=1.0):
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    bpy.context.scene.unit_settings.scale_length = unit_scale


def _import(bpy, doc, folder, name, colliders=True):
    path = Path(folder) / f"{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    outcome = bpy.ops.cable_harness.import_case(filepath=str(path), colliders=colliders, scene_settings=True)
    assert outcome == {"FINISHED"}, outcome


def _cables(bpy):
    return sorted((o for o in bpy.context.scene.objects if o.cable_harness.role == "CABLE"), key=lambda o: o.name)


def _solve_all(bpy):
    bpy.ops.object.select_all(action="DESELECT")
    outcome = bpy.ops.cable_harness.solve()
    assert outcome == {"FINISHED"}, outcome
    return _scene_fingerprint(bpy)


def _scene_fingerprint(bpy) -> list:
    """Every cable's curve points (world, m) and whether it converged; every junction's place (m)."""
    from mathutils import Vector

    scale = bpy.context.scene.unit_settings.scale_length
    out = []
    for ob in _cables(bpy):
        points = ob.data.splines[0].points
        co = [0.0] * (4 * len(points))
        points.foreach_get("co", co)
        M = ob.matrix_world
        for i in range(len(points)):
            p = M @ Vector(co[4 * i : 4 * i + 3])
            out += [float(v) * scale for v in p]
        if not ob.cable_harness.result_converged:
            raise AssertionError(f"{ob.name}: not converged: {ob.cable_harness.result_message}")
    for ob in sorted(bpy.context.scene.objects, key=lambda o: o.name):
        if ob.cable_harness.role == "JUNCTION":
            out += [float(v) * scale for v in ob.matrix_world.translation]
    return out


def _two_connectors(bpy, unit_scale):
    """Add Connector twice and Cable Between Selected, in a scene of ``unit_scale`` m per unit."""
    _fresh(bpy, unit_scale)
    bpy.ops.cable_harness.add_connector()
    start = bpy.context.active_object
    bpy.ops.cable_harness.add_connector()
    end = bpy.context.active_object
    end.location = (0.3 / unit_scale, 0.0, 0.0)
    bpy.context.view_layer.update()
    start.select_set(True)
    end.select_set(True)
    bpy.context.view_layer.objects.active = start
    assert bpy.ops.cable_harness.make_cable(segments=30, solve=False) == {"FINISHED"}
    return start, end


def simple_cable(bpy, module, folder):
    _two_connectors(bpy, 0.001)  # a scene in millimetres, as CAD scenes are
    return _solve_all(bpy)


def clip_kinds(bpy, module, folder):
    _fresh(bpy)
    _import(bpy, CLIPS, folder, "clips")
    return _solve_all(bpy)


def mesh_collider(bpy, module, folder):
    _fresh(bpy, 0.001)
    _import(bpy, COLLIDER, folder, "collider")
    return _solve_all(bpy)


def cable_cable_contact(bpy, module, folder):
    _fresh(bpy)
    _import(bpy, CROSSING, folder, "crossing")
    return _solve_all(bpy)


def junctions(bpy, module, folder):
    _fresh(bpy)
    _import(bpy, JUNCTIONS, folder, "junctions")
    return _solve_all(bpy)


def bundle(bpy, module, folder):
    _fresh(bpy)
    _import(bpy, BUNDLE, folder, "bundle")
    return _solve_all(bpy)


def rest_shape(bpy, module, folder):
    _fresh(bpy)
    _import(bpy, REST_SHAPE, folder, "rest")
    return _solve_all(bpy)


def _model(name):
    def feature(bpy, module, folder):
        _two_connectors(bpy, 1.0)
        bpy.context.scene.cable_harness.model = name
        return _solve_all(bpy)

    feature.__name__ = f"model_{name}"
    return feature


def _ticks(bpy, end, ticks=3):
    """Simulate's ticks while the end connector is dragged 5 mm per tick."""
    for _ in range(ticks):
        end.location.y += 0.005 / bpy.context.scene.unit_settings.scale_length
        bpy.context.view_layer.update()
        assert bpy.ops.cable_harness.simulate(ticks=1) == {"FINISHED"}
    return _scene_fingerprint(bpy)


def simulate(bpy, module, folder):
    _, end = _two_connectors(bpy, 0.001)
    return _ticks(bpy, end)


def _dynamics(name):
    def feature(bpy, module, folder):
        _, end = _two_connectors(bpy, 1.0)
        settings = bpy.context.scene.cable_harness
        settings.model, settings.motion, settings.time_step, settings.damping = name, "DYNAMIC", 0.004, 2.0
        return _ticks(bpy, end)

    feature.__name__ = f"dynamics_{name}"
    return feature


def _baked_lift(bpy, frames):
    """Two connectors in millimetres, the end one lifted 20 mm over ``frames`` frames, baked."""
    _, end = _two_connectors(bpy, 0.001)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    end.keyframe_insert("location", frame=1)
    end.location.z += 20.0  # mm
    end.keyframe_insert("location", frame=frames)
    scene.frame_set(1)
    assert bpy.ops.cable_harness.bake() == {"FINISHED"}
    return scene


def bake_and_report(bpy, module, folder):
    scene = _baked_lift(bpy, 4)
    out = Path(folder) / "report"
    out.mkdir(exist_ok=True)
    assert bpy.ops.cable_harness.export_report(directory=str(out)) == {"FINISHED"}
    report = json.loads((out / "report.json").read_text())
    numbers = []
    for frame in (1, 2, 3, 4):
        scene.frame_set(frame)
        numbers += _scene_fingerprint(bpy)
    for cable in report["cables"]:
        numbers += [float(cable[k]) for k in ("rest_length", "length", "min_bend_radius") if cable[k] is not None]
    return numbers


def variation_study(bpy, module, folder):
    _two_connectors(bpy, 1.0)
    (cable,) = _cables(bpy)
    settings = bpy.context.scene.cable_harness
    v = settings.variations.add()
    v.cable, v.quantity, v.distribution, v.tolerance = cable, "LENGTH", "CORNERS", 0.01
    settings.study_samples, settings.study_workers = 1, 1
    settings.study_folder = str(Path(folder) / "study")
    assert bpy.ops.cable_harness.run_study() == {"FINISHED"}
    runner = _ext(module, "cable_harness.study_runner")
    assert runner.wait(600), runner.message()
    study = runner.result()
    assert not study["summary"]["failed"], study["summary"]
    numbers = []
    for key, value in sorted(study["summary"]["outputs"].items()):
        if not key.endswith("solve_ms"):  # a time, not a result
            numbers += [float(value[k]) for k in sorted(value) if isinstance(value[k], float)]
    return numbers


def engineering_outputs(bpy, module, folder):
    """Export Formboard, Export KBL, Swept Envelope of a Bake and Calibrate from Tests, in millimetres."""
    scene = _baked_lift(bpy, 3)
    out = Path(folder) / "outputs"
    out.mkdir(exist_ok=True)
    assert bpy.ops.cable_harness.export_formboard(filepath=str(out / "board.svg")) == {"FINISHED"}
    board = (out / "board.svg").read_text(encoding="utf-8")
    numbers = [float(board.split('data-length-mm="')[1].split('"')[0])]
    assert bpy.ops.cable_harness.export_kbl(filepath=str(out / "harness.kbl")) == {"FINISHED"}
    kbl = _ext(module, "solver_core").read_kbl(str(out / "harness.kbl"))
    numbers += [s.length for s in kbl.segments.values()] + [w["length"] for w in kbl.wires.values()]
    (cable,) = _cables(bpy)
    for ob in scene.objects:
        ob.select_set(ob is cable)
    bpy.context.view_layer.objects.active = cable
    assert bpy.ops.cable_harness.swept_envelope(filepath=str(out / "envelope.stl")) == {"FINISHED"}
    numbers.append(float(len(bpy.data.objects[f"{cable.name} Envelope"].data.vertices)))
    tests = {
        "format": "cable-harness-calibration/1",
        "name": "tour_bench",
        "diameter": 0.004,
        "linear_density": 0.1,
        "tests": [{"kind": "three_point", "span": 0.2, "force": 0.2, "deflection": 0.0158}],
    }
    (out / "bench.json").write_text(json.dumps(tests), encoding="utf-8")
    library = out / "materials.json"
    done = bpy.ops.cable_harness.calibrate_from_tests(filepath=str(out / "bench.json"), library=str(library))
    assert done == {"FINISHED"}
    numbers.append(json.loads(library.read_text(encoding="utf-8"))["materials"]["tour_bench"]["EI"])
    return numbers


FEATURES = [
    simple_cable,
    clip_kinds,
    mesh_collider,
    cable_cable_contact,
    junctions,
    bundle,
    rest_shape,
    _model("cosserat_pbd"),
    _model("kirchhoff_cg"),
    _model("mass_spring"),
    simulate,
    _dynamics("cosserat"),
    _dynamics("cosserat_pbd"),
    bake_and_report,
    engineering_outputs,
    variation_study,
]


def kernels_compiled(module) -> int:
    """How many kernel signatures this process compiled, rather than loaded from the cache."""
    from numba.core.dispatcher import Dispatcher

    compiled = 0
    for name, mod in list(sys.modules.items()):
        if name.startswith(f"{module}.solver_core."):
            for value in vars(mod).values():
                if isinstance(value, Dispatcher) and value.__module__ == name:
                    compiled += len(value.stats.cache_misses)
    return compiled


def cache_snapshot(folder) -> dict:
    """The numba cache's files and their sizes and times: a compile anywhere (a child process too)
    adds or rewrites one."""
    root = Path(folder)
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*.nb[ic]")} if root.exists() else {}


def run_tour(bpy, module, cache_dir, names=None) -> dict:
    """Run the features (all, or those named) in order; returns {name: {"seconds", "compiled",
    "cache_changes", "fingerprint"} or {"error"}}."""
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for feature in FEATURES:
            if names and feature.__name__ not in names:
                continue
            before_files, before = cache_snapshot(cache_dir), kernels_compiled(module)
            t0 = time.perf_counter()
            try:
                fingerprint = feature(bpy, module, folder)
            except Exception as exc:  # reported by name, the tour goes on
                out[feature.__name__] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            seconds = time.perf_counter() - t0
            after_files = cache_snapshot(cache_dir)
            changed = sorted(
                k for k in set(before_files) | set(after_files) if before_files.get(k) != after_files.get(k)
            )
            out[feature.__name__] = {
                "seconds": seconds,
                "compiled": kernels_compiled(module) - before,
                "cache_changes": [Path(k).name for k in changed],
                "fingerprint": fingerprint,
            }
    return out
