# SPDX-License-Identifier: GPL-3.0-or-later
"""A harness solved step after step (Harness), its predictor and the result documents it writes."""
