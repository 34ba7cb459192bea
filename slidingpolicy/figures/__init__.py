"""PNG figures (matplotlib, the `plots` extra): of runs, sweeps and capacities (`plots`), of
one explained decision (`explain_figure`), and of a run's timeline (`timeline_figure`)."""
