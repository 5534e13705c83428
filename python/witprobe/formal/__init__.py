"""Per-run obligations: the model, rendering to Lean, the reference checker, the Lean runner."""
