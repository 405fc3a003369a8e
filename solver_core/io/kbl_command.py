# SPDX-License-Identifier: GPL-3.0-or-later
"""The command line's ``kbl CASE.json -o HARNESS.kbl`` (write a solved harness as KBL 2.4 SR-1) and
``read-kbl HARNESS.kbl`` (its topology and lengths back, as JSON)."""

import json
import os
import sys

import numpy as np

from ..errors import CaseError, check_title
from ..specs.case import load_case, read_json
from .kbl import CURVE_TOLERANCE, kbl_text
from .kbl_model import kbl_harness
from .kbl_read import read_kbl
from .output_files import AtomicOutput


def add_kbl_parsers(sub) -> None:
    kbl = sub.add_parser(
        "kbl", help="write the solved harness as a KBL 2.4 SR-1 file (VDA 4964): topology, lengths, curves"
    )
    kbl.add_argument("case", help="case JSON file")
    kbl.add_argument("-o", "--output", required=True, help="the KBL file: HARNESS.kbl (XML)")
    kbl.add_argument("--result", help="the case's result JSON (default: the case is solved first)")
    kbl.add_argument(
        "--step", type=int, default=0, help="the solve to write: 0 the case as routed (default), k after step k"
    )
    kbl.add_argument("--title", help="the harness's part number and name (default: the case file's name)")
    kbl.add_argument(
        "--tolerance",
        type=float,
        default=CURVE_TOLERANCE,
        help=f"largest deviation of a centre curve from the solved centre line, m (default {CURVE_TOLERANCE:g})",
    )
    read = sub.add_parser("read-kbl", help="read a KBL file's topology and lengths (m) and print them as JSON")
    read.add_argument("kbl", help="the KBL file")
    read.add_argument("-o", "--output", help="write the JSON here instead of printing it")


def run_kbl_command(args) -> int:
    if args.command == "read-kbl":
        text = json.dumps(read_kbl(args.kbl).summary(), indent=1)
        if args.output is None:
            print(text)
            return 0
        _write(args.output, text + "\n")
        return 0
    if not 1e-9 <= args.tolerance <= 1.0:  # also NaN
        raise CaseError(f"--tolerance must be from 1e-9 to 1 m, got {args.tolerance:g}")
    case = load_case(args.case)
    result = read_json(args.result, "result file") if args.result else None
    with np.errstate(all="ignore"):
        harness = kbl_harness(case, result, args.step)
        title = args.title or os.path.splitext(os.path.basename(args.case))[0]
        check_title(title, "--title" if args.title else "the case file's name (give --title)")
        text = kbl_text(harness, title, args.tolerance)
    _write(args.output, text)
    failed = [cid for cid, c in harness.cables.items() if not c.converged]
    print(
        f"{args.output}: {len(harness.nodes)} nodes, {len(harness.segments)} segments, {len(harness.wires)} wires, "
        f"{sum(s.length for s in harness.segments) * 1e3:.0f} mm of segment in all"
    )
    for cid in failed:
        print(f"warning: cable {cid!r} did not converge; the file holds its last good state", file=sys.stderr)
    return 1 if failed else 0


def _write(path: str, text: str) -> None:
    output = AtomicOutput(path)
    try:
        output.write(text)
        output.commit()
    except BaseException:
        output.discard()
        raise
