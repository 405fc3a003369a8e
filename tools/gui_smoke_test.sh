#!/usr/bin/env bash
# GUI smoke test: Debian's Blender (3.4) in a real window on a virtual screen (Xvfb) loads the
# extension as a legacy add-on, runs the modal Simulate operator while a script drags a connector,
# and saves a screenshot. Not part of CI (it installs ~700 MB of Debian packages):
#
#     bash tools/gui_smoke_test.sh          -> out/gui_smoke.png, out/gui_smoke.json
#     bash tools/gui_smoke_test.sh screenshots
#         -> docs/first_solve.png (the panel while the kernels compile, from an empty cache) and
#            docs/viewport.png (the equipment bay with the viewport's physics drawing)
#     bash tools/gui_smoke_test.sh study
#         -> docs/study.png (a Variation Study of the equipment bay and the envelope of its shapes)
#     bash tools/gui_smoke_test.sh panel
#         -> docs/panel.png (a solved bundle in a millimetre scene: the panel at its default width with
#            the clip and wire lists, the viewport with the force arrows)
#
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$ROOT/out"
mkdir -p "$OUT"
SCRIPT="$ROOT/tests/gui/smoke_gui.py"; LIMIT=300; CACHE="$OUT/numba-cache-debian-blender"
if [ "${1:-}" = "screenshots" ]; then
  SCRIPT="$ROOT/tests/gui/screenshots_gui.py"; LIMIT=1200; CACHE="$OUT/numba-cache-debian-blender-fresh"
  rm -rf "$CACHE"  # an empty cache: the first start compiles, and the panel shows it
elif [ "${1:-}" = "study" ]; then
  SCRIPT="$ROOT/tests/gui/study_gui.py"; LIMIT=1200
elif [ "${1:-}" = "panel" ]; then
  SCRIPT="$ROOT/tests/gui/panel_gui.py"; LIMIT=1800
fi
need=()
for cmd in blender Xvfb xdotool; do command -v "$cmd" >/dev/null || need+=("$cmd"); done
/usr/bin/python3 -c "import numba, numpy" 2>/dev/null || need+=(numba)  # the Python Debian's Blender runs
if [ ${#need[@]} -gt 0 ]; then
  echo "[gui smoke] installing Debian packages (blender, xvfb, python3-numpy, python3-numba, ...)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    blender xvfb xdotool imagemagick x11-apps python3-numpy python3-numba >/dev/null
fi
WORK="$(mktemp -d)"
mkdir -p "$WORK/scripts/addons"
ln -s "$ROOT" "$WORK/scripts/addons/cable_harness"
DISPLAY_NUM=":$((90 + RANDOM % 9))"
Xvfb "$DISPLAY_NUM" -screen 0 1280x800x24 -nolisten tcp &
XVFB_PID=$!
trap 'kill $XVFB_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
sleep 1
rm -f "$OUT/gui_smoke.json" "$OUT/gui_smoke.ready"
# Debian's Blender runs the system Python and its own numba: give that numba a cache of its own.
DISPLAY="$DISPLAY_NUM" BLENDER_USER_SCRIPTS="$WORK/scripts" CABLE_HARNESS_GUI_OUT="$OUT" \
  CABLE_HARNESS_DOCS="$ROOT/docs" CABLE_HARNESS_ROOT="$ROOT" NUMBA_CACHE_DIR="$CACHE" \
  timeout "$LIMIT" blender --factory-startup --python "$SCRIPT" > "$OUT/gui_smoke.log" 2>&1 &
BLENDER_PID=$!
sleep 3
DISPLAY="$DISPLAY_NUM" xdotool key Escape 2>/dev/null || true   # close the splash screen
for _ in $(seq 60); do [ -f "$OUT/gui_smoke.ready" ] && break; sleep 0.5; done
# open the sidebar's Harness tab (fixed place on this 1280x800 screen) so the panel is drawn too
DISPLAY="$DISPLAY_NUM" xdotool mousemove 1043 248 click 1 2>/dev/null || true
if [ "${1:-}" = "panel" ]; then  # the scene is built later: its tab is clicked again once it is there
  for _ in $(seq 3600); do [ -f "$OUT/gui_smoke.click" ] && break; sleep 0.5; done
  sleep 1; DISPLAY="$DISPLAY_NUM" xdotool mousemove 1043 248 click 1 2>/dev/null || true
  rm -f "$OUT/gui_smoke.click"
fi
wait $BLENDER_PID || true
if [ ! -f "$OUT/gui_smoke.json" ]; then
  echo "[gui smoke] FAILED: Blender ended without a result; see out/gui_smoke.log"; tail -20 "$OUT/gui_smoke.log"; exit 1
fi
python3 - "$OUT/gui_smoke.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["steps"]:
    print("[gui smoke]", s)
print("[gui smoke]", "PASSED" if r.get("ok") else "FAILED: " + r.get("error", "?"))
sys.exit(0 if r.get("ok") else 1)
PY
