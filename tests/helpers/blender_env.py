# SPDX-License-Identifier: GPL-3.0-or-later
"""Loading the extension into the bpy module from PyPI, for the Blender tests (the same way the
main job does it: tools/blender_session.py). User resources go to a temporary folder."""

from tools import prebuild_kernels
from tools.blender_session import MODULE, REPO_MODULE, ROOT, disable_extension, enable_extension, prepare_environment

# the kernels of the Linux zip, built once for these sources (dist/kernel_cache, kept while they stay):
# the Blender tests load the checkout under the installed package name and use them as the zip does
prepare_environment(prebuild_kernels.build())

import bpy  # noqa: E402,F401

__all__ = ["MODULE", "REPO_MODULE", "ROOT", "disable_extension", "enable_extension"]
