"""Reporting: statistics and intervals, pass@k, plots, the rollout inspector, MLflow."""
