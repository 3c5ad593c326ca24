"""Reports of an analysis: the human terminal report and the JSON document."""
