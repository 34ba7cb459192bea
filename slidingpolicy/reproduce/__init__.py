"""`slidingpolicy reproduce`: the paper's figures and tables, regenerated from the package."""

from slidingpolicy.reproduce.presets import FULL, QUICK, ReproConfig, Setting
from slidingpolicy.reproduce.run import reproduce, write_report

__all__ = ["FULL", "QUICK", "ReproConfig", "Setting", "reproduce", "write_report"]
