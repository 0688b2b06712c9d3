"""The Python half of Kiln's Quadrants bridge: run a Quadrants program and capture
its kernels' IR, its field table and the values around every call (capture.py;
docs/quadrants-ir.md describes what it writes)."""
