"""Training methods on projected private features (pillar, dpsgd, jl, gep, noisy-sgd), warm starts, and sweeps
over (method, k, ε) × hyper-parameters with their selection.

Imports `linear`, `projection`, `privacy` and `artifacts`; the CLI and the public API build on it.
"""
