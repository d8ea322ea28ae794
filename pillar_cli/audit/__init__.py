"""Auditing a privacy guarantee from the outside: the one-run canary audit (Steinke, Nasr & Jagielski, NeurIPS 2023)
of the very configuration a user trains, an independent recomputation of a model's ledger, and the
neighbouring-datasets check of every value the shipped files hold.

Only the CLI imports it.

May import: `errors`, `lazy`, `randomness`, `artifacts`, `privacy`, `projection`, `linear.engine` (the configurations it
trains), `methods.base` (the methods it audits, as the sweep trains them), `release.exported` (the export formats),
`release.signing` (a file's signature), `release.card` (an hf folder's card, made again from its statement).
"""
