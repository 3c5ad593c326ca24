"""The real-client test bed: librdkafka's mock cluster and real clients rebalancing, recorded as fixtures."""
