"""SQL over the tables of an analysis (events, rebalances, findings, files) with DuckDB (the `query` extra)."""
