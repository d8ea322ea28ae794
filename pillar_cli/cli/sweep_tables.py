"""What train-private prints: the plan of a dry run, and the model it wrote, cell by cell."""

from __future__ import annotations

from pathlib import Path

from pillar_cli import artifacts
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.cli.common import print_json, print_table, stderr
from pillar_cli.methods.plan import SweepPlan
from pillar_cli.privacy.basis import ChosenBy


def print_plan(plan: SweepPlan, as_json: bool) -> None:
    """--dry-run: every run as the plan sets it (from the exact n, which only the data holder sees)."""
    runs = plan.runs()
    if as_json:
        return print_json({"runs": runs, "count": plan.count.to_dict()})
    print_table(
        f"{len(runs)} runs planned from the exact number of rows ({plan.count.value:,.0f}); the run itself "
        "reads its noisy count, so q and σ move slightly",
        runs,
        list(runs[0]) if runs else [],
        {"lr": ".4g", "sample_rate": ".4g", "noise_multiplier": ".4g"},
    )


def print_model(out: Path, runs: int, artifact: artifacts.Artifact, as_json: bool) -> None:
    """The model's cells: what chose each run, its val accuracy; with --json also the ε each cell spent (the
    largest of its runs') and the whole file's."""
    header = ModelRecord.of(artifact)
    if as_json:
        spent = artifact.arrays["runs/epsilon_spent"]
        cells = [
            {**cell.to_attrs(), "epsilon_spent": float(max(spent[i] for i in cell.run_ids))}
            for cell in header.selection
        ]
        return print_json(
            {
                "output": str(out),
                "selection": cells,
                "note": header.selection_note,
                "whole_file_epsilon": header.whole_file["epsilon"],
                "risk_target": header.risk_target and header.risk_target.to_attrs(),
            }
        )
    how = (
        "private cells: accounted selection, inside ε"
        if header.accounted
        else "one configuration per cell: nothing selected"
        if all(cell.selected == ChosenBy.NOTHING for cell in header.selection)
        else "selected on val (not accounted in ε)"
    )
    # what an accounted selection released is a noisy score, not an accuracy
    score = "noisy_val_score" if header.accounted else "val_accuracy_mean"
    print_table(
        f"{out}: {runs} runs on {' + '.join(header.trained_on)} ({header.n_private:,} rows), {how}",
        [cell.to_attrs() | {score: cell.val_accuracy_mean} for cell in header.selection],
        ["method", "k", "epsilon", "lr", "steps", "batch_size", score, "selected"],
        {score: ".3f", "lr": ".4g"},
    )
    if target := header.risk_target:
        stderr.print(
            f"ε calibrated to a risk target: no membership attack on one unit above "
            f"{target.max_tpr:g} TPR at {target.at_fpr:g} FPR "
            f"(ε = {header.selection[0].epsilon:.4g} per head)"
        )
