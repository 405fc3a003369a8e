# SPDX-License-Identifier: GPL-3.0-or-later
"""One discrete Cosserat rod: its static arrays, its state, and its elastic and gravity energy."""
