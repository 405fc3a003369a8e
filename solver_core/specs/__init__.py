# SPDX-License-Identifier: GPL-3.0-or-later
"""The case format: specs of cables, junctions, bundles, materials and rest shapes, parsed and written back."""
