"""`python -m slidingpolicy.cli`: the console script."""

from slidingpolicy.cli import main

main()
