# SPDX-License-Identifier: GPL-3.0-or-later
"""Every state a solve passes through: the Newton kernel run one iteration per call, each kernel call's
start and each iterate kept (nodes relative to the model origin, as the kernel holds them).

The solve otherwise runs as it does: the kernel's candidate pairs and search places are handed from
one iteration to the next, so only its trust region restarts each call. ``paths`` groups the states
by kernel call: within a call the nodes move from each state to the next; between calls the solver
may restart from elsewhere (a bisected step, a checkpoint put back)."""

import inspect

import numpy as np

from .swept import passes_through


def _argument(kernel, name: str) -> int:
    """Where ``name`` sits among the kernel's arguments after pos and quat (of the module's own kernel:
    in a Blender test, the installed extension's)."""
    return list(inspect.signature(getattr(kernel, "py_func", kernel)).parameters).index(name) - 2


class IterateRecorder:
    def __init__(self, equilibrium_module):
        self.module = equilibrium_module
        self.real = equilibrium_module.minimise_rod_energy
        self.max_iterations = _argument(self.real, "max_iterations")
        self.handed = _argument(self.real, "handed")
        self.extra = _argument(self.real, "extra")
        self.paths = []
        self.interactions = []  # per path: the kernel's InteractionArrays (obstacles in the path's frame)
        self.cables = []  # per path: an array of the cable's model (its node_dof), the same object per cable

    def __enter__(self):
        self.module.minimise_rod_energy = self
        return self

    def __exit__(self, *exc):
        self.module.minimise_rod_energy = self.real

    @property
    def states(self) -> list:
        return [state for path in self.paths for state in path]

    def __iter__(self):
        return iter(self.states)

    def __call__(self, pos, quat, *args):
        args = list(args)
        limit = args[self.max_iterations]
        path = [pos.copy()]
        self.paths.append(path)
        self.interactions.append(args[self.extra])
        self.cables.append(args[0].node_dof)
        if limit == 0:
            return self.real(pos, quat, *args)
        total = 0
        while True:
            args[self.max_iterations] = 1
            out = self.real(pos, quat, *args)
            path.append(pos.copy())
            total += out.iterations
            args[self.handed] = out.pairs
            if out.status != 1 or total >= limit:
                return out._replace(iterations=total)


def _origin(interactions, obstacle) -> np.ndarray:
    """The world position of a kernel call's frame: the kernel holds nodes and obstacles relative to
    the model's origin (interactions._shifted_obstacles), so the shift of the obstacle gives it (for a
    mesh, of its bounding box: a Blender collider's triangles come in their own order)."""
    arrays = interactions.obstacles
    if obstacle["type"] == "sphere":
        return np.asarray(obstacle["center"], float) - arrays.sphere_centre[0]
    world = np.asarray(obstacle["vertices"], float)
    shifted = arrays.triangles.reshape(-1, 3)
    origin = world.min(axis=0) - shifted.min(axis=0)
    size = float(np.abs(world).max())
    np.testing.assert_allclose(world.max(axis=0) - shifted.max(axis=0), origin, atol=1e-6 * size)
    return origin


def world_motions(recorder, obstacle):
    """(before, after) in world coordinates for every motion: within each kernel call, and into each
    call's start from the nearest state (over all its nodes) of the same cable recorded before it."""
    seen = {}  # per cable (its model's node_dof array, by identity): its states so far, stacked
    for path, interactions, model_array in zip(recorder.paths, recorder.interactions, recorder.cables):
        origin = _origin(interactions, obstacle)
        path = np.array(path) + origin
        key = id(model_array)  # the recorder keeps every cable's array alive, so no id is reused
        before = seen.get(key)
        if before is not None:
            # over all nodes: a holder's jump dominates the largest node distance, which is then the
            # same from many earlier states (a Bake frame's connector move made one of the first
            # solve's iterates look as near as the state the frame started from)
            nearest = before[int(((before - path[0]) ** 2).sum(axis=(1, 2)).argmin())]
            yield nearest, path[0]
        yield from zip(path[:-1], path[1:])
        seen[key] = path if before is None else np.concatenate((before, path))


def passes_through_count(recorder, obstacle, radius) -> int:
    """How many motions pass the centre line through the obstacle (half a radius under a sphere's
    surface, as bench_robustness counts)."""
    return sum(passes_through(a, b, obstacle, core=0.5 * radius) for a, b in world_motions(recorder, obstacle))
