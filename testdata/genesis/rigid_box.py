"""A box dropped onto a plane: Genesis's rigid solver, headless, on the
CPU, for a few steps (argv[1], default 5). Genesis's own default settings
otherwise. Prints the box's height after the steps."""

import sys

import genesis as gs

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
gs.init(backend=gs.cpu)
scene = gs.Scene(show_viewer=False)
scene.add_entity(gs.morphs.Plane())
box = scene.add_entity(gs.morphs.Box(pos=(0.0, 0.0, 0.25), size=(0.2, 0.2, 0.2)))
scene.build()
for _ in range(steps):
    scene.step()
print(f"box z after {steps} steps: {float(box.get_pos()[2]):.6f}")
