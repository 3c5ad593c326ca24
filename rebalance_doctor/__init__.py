"""rebalance-doctor: log forensics for Apache Kafka consumer-group rebalance incidents."""

__version__ = "0.1.0"
