"""Evaluation of selected heads (metrics over seeds), the paper's figures and result tables.

Nothing imports it but the CLI and the API.

May import: `errors`, `randomness` (the note of reproducible noise), `artifacts`, `projection`,
`methods.selection` (the val selection), `methods.catalog` and `finetune.runs` (each method's family),
`embedding.networks` (fine-tuned networks evaluated), `privacy` (a release's trade-off curve, for its page),
`version` (the program's name).
"""
