"""Training methods on projected private features (pillar, dpsgd, jl, gep, noisy-sgd), warm starts, and sweeps
over (method, k, ε) × hyper-parameters with their selection.

The CLI and the public API build on it.

May import: `errors`, `lazy`, `memory`, `randomness`, `devices`, `artifacts`, `privacy`, `projection`,
`linear`.
"""
