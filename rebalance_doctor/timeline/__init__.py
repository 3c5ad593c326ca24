"""Each group's rebalance timeline, rebuilt from the events table (model + builder)."""

from .builder import build_timelines, build_group
from .model import Evidence, GroupTimeline, Rebalance

__all__ = ["Evidence", "GroupTimeline", "Rebalance", "build_group", "build_timelines"]
