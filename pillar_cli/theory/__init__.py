"""The theory's diagnostics: ξ_k, margins, eigengaps and Theorem 1's sample-size terms.

The margins use scikit-learn's linear SVM.

May import: `errors`, `artifacts` (the split it reads), `methods.rules` (the default rule's k, which is the k
it recommends for n rows at ε).
"""
