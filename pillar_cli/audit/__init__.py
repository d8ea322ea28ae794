"""Auditing a privacy guarantee from the outside: the one-run canary audit (Steinke, Nasr & Jagielski, NeurIPS 2023)
of the very configuration a user trains, and an independent recomputation of a model's ledger.

Imports `errors`, `artifacts`, `privacy`, `projection`, `linear` and `methods`; only the CLI imports it.
"""
