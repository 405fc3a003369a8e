# SPDX-License-Identifier: GPL-3.0-or-later
"""Distances between points, segments and triangles, the triangle tree, and mount zones cut out of meshes."""
