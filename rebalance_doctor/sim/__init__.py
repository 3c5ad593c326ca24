"""The incident simulator: protocol models on a clock, scenarios, and what every process logs, with its truth."""
