"""Gradient Subspace Distance: probe models, per-sample gradient matrices, top-k subspaces, their DP releases
(Analyze-Gauss, matrix Bingham) and the distance that ranks candidate public datasets.

Never the training methods.

May import: `errors`, `lazy`, `randomness`, `artifacts`, `privacy`, `linear.gradients` (the softmax head's
closed form), `embedding.images`, `embedding.weights`, `embedding.networks` (the probes' networks and
weights).
"""
