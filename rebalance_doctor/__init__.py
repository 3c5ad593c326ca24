"""rebalance-doctor: log forensics for Apache Kafka consumer-group rebalance incidents.

    import rebalance_doctor
    result = rebalance_doctor.analyze("logs/")      # docs/api.md
"""

__version__ = "0.1.0"

__all__ = ["Analysis", "__version__", "analyze"]


def __getattr__(name: str):
    # The API is imported on first use: `import rebalance_doctor` (and every forked reading
    # worker, and the Spark executors) stays as cheap as the parsing core needs it to be.
    if name in ("analyze", "Analysis", "AnalysisError", "NothingMatched", "Rows"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'rebalance_doctor' has no attribute {name!r}")
