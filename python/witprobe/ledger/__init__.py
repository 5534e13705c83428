"""The request-level risk ledger."""
