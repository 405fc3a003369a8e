# SPDX-License-Identifier: GPL-3.0-or-later
"""Every state a solve passes through: the Newton kernel run one iteration per call, each kernel call's
start and each iterate kept (nodes relative to the model origin, as the kernel holds them).

The solve otherwise runs as it does: the kernel's candidate pairs and search places are handed from
one iteration to the next, so only its trust region restarts each call. ``paths`` groups the states
by kernel call: within a call the nodes move from each state to the next; between calls the solver
may restart from elsewhere (a bisected step, a checkpoint put back)."""

from .cases import minimise_argument


class IterateRecorder:
    def __init__(self, equilibrium_module):
        self.module = equilibrium_module
        self.real = equilibrium_module.minimise_rod_energy
        self.max_iterations = minimise_argument("max_iterations")
        self.searched_from = minimise_argument("searched_from")
        self.extra = minimise_argument("extra")
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
        self.cables.append(args[0])
        if limit == 0:
            return self.real(pos, quat, *args)
        total = 0
        while True:
            args[self.max_iterations] = 1
            out = self.real(pos, quat, *args)
            path.append(pos.copy())
            total += out[1]
            at = self.searched_from
            args[at : at + 6] = [out[5], out[6], out[7], out[8], out[9], pos.copy()]
            if out[0] != 1 or total >= limit:
                return (out[0], total, *out[2:])
