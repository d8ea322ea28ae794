"""The theory's diagnostics: ξ_k, margins, eigengaps and Theorem 1's sample-size terms.

Imports only `pillar_cli.errors` (and scikit-learn's linear SVM).
"""
