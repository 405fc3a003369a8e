# SPDX-License-Identifier: GPL-3.0-or-later
"""Everything besides the rod in a cable's energy: obstacles, candidate pairs, contact, friction, clips, step limits."""
