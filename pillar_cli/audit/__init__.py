"""Auditing a privacy guarantee from the outside: the one-run canary audit (Steinke, Nasr & Jagielski, NeurIPS
2023) of the very configuration a user trains, an independent recomputation of a model's ledger, and the
neighbouring-datasets check of every value the shipped files hold.

Only the CLI imports it.

May import: `errors`, `lazy`, `randomness`, `artifacts`, `privacy`, `projection`, `linear.engine` (the
configurations it trains), `methods` (the methods it audits, and the sweep the neighbours check reruns),
`release` (the releases and exports it reruns and reads: formats, signatures, cards), `reporting` (the
evaluation, tables, figure and page the neighbours check publishes of each run).
"""
