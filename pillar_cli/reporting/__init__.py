"""Evaluation of selected heads (metrics over seeds), the paper's figures and result tables.

Imports `artifacts`, `projection` and `methods` (selection); nothing imports it but the CLI and the API.
"""
