"""Controlled comparisons and the adjudication calculus."""
