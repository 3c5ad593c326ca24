"""Kafka's template inventories -> pattern packs: the renderer of realistic lines for coverage tests and the
generators of the inventory-derived and client packs."""
