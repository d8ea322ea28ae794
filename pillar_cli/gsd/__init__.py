"""Gradient Subspace Distance: probe models, per-sample gradient matrices, top-k subspaces, their DP releases
(Analyze-Gauss, matrix Bingham) and the distance that ranks candidate public datasets.

Imports `linear.gradients` (the softmax head's closed form), `embedding.images`, `privacy` and `errors`; never the
training methods.
"""
