"""Synthetic log lines from the Kafka template inventory: a renderer for coverage tests and the
generator of the inventory-derived pattern packs."""
