"""Intervention (Algorithm 2.1): judges, interveners, the prompted chat policies of the paper
setting, semi-on-policy rollouts, and which judge and intervener a run uses (policies)."""
