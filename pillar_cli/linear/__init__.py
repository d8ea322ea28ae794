"""The linear softmax head under DP-SGD: closed-form per-sample gradients (shared with GSD's linear probe),
the exact engine (eager on the CPU, CUDA graphs on a GPU; persons.py: the person as the privacy unit) and
opacus as the reference it is tested against.

Methods and GSD build on it.

May import: `devices`, `lazy`, `randomness`, `privacy.count` (the row count a sampling rate and a step's scale
read), `privacy.unit` (the training rows' units: rows, or persons drawn and clipped together).
"""
