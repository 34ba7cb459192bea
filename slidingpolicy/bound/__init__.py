"""Upper bounds on the load any policy can carry. The fluid bound (`fluid`): a linear program
over iteration types, from the least cost of an iteration (`cost`, `envelope`), a workload's
requests (`population`, `demand`) and the pacing floor (`pacing`). The trace bound (`trace`):
the most requests of one known workload any schedule can serve. `limits` gives both for a run
specification."""
