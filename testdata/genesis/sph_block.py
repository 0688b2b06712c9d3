"""A small block of SPH liquid (about 125 particles) falling in a box:
Genesis's SPH solver, headless, on the CPU, for a few steps (argv[1],
default 3). Prints the particles' mean height after the steps."""

import sys

import genesis as gs

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
gs.init(backend=gs.cpu)
scene = gs.Scene(
    sim_options=gs.options.SimOptions(dt=4e-3, substeps=2),
    sph_options=gs.options.SPHOptions(lower_bound=(-0.3, -0.3, 0.0), upper_bound=(0.3, 0.3, 0.6), particle_size=0.02),
    show_viewer=False,
)
liquid = scene.add_entity(
    material=gs.materials.SPH.Liquid(sampler="regular"),
    morph=gs.morphs.Box(pos=(0.0, 0.0, 0.2), size=(0.1, 0.1, 0.1)),
)
scene.build()
for _ in range(steps):
    scene.step()
pos = liquid.get_particles_pos()
print(f"{pos.shape[-2]} particles, mean z after {steps} steps: {float(pos[..., 2].mean()):.6f}")
