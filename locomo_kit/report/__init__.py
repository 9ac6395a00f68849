"""Reports: aggregation of a run's records, published baselines, error analysis, figures, report.md."""
