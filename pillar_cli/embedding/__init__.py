"""Images → frozen backbone → features: the backbone registry, preprocessing on the device, batched extraction
streamed to a resumable store, and the shards of a run split over processes.

May import: `errors`, `lazy`, `memory`, `devices`, `data`, `artifacts`, `privacy.premises` (what a file
records of how it fixed its class set and splits).
"""
