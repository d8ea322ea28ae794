"""A command's --help as plain text in panels: every option under the panel of what it is about (inputs,
model, privacy, training, selection, running, output), wrapped to the terminal's width and never cut.

A framed table squeezes long flags (`--standardize/--no-standardize`) to fit 80 columns and cuts them with
"…"; plain text puts a long flag on a line of its own instead. An `Example:` paragraph stays a shell command
that can be copied: broken at spaces with a trailing backslash where it is wider than the terminal. The panel
is the option's own `rich_help_panel` if it names one (the method plugins' options do), else the panel its
name belongs to below.
"""

from __future__ import annotations

import inspect

from typer.core import TyperCommand

PANEL_ORDER = (
    "Arguments",
    "Inputs",
    "Model",
    "Privacy",
    "Training",
    "Selection",
    "Method options",
    "Running",
    "Output",
)

_PANEL_OF_NAME = {
    "Inputs": (
        "config",
        "source",
        "path",
        "param",
        "param_",
        "classes",
        "classes_from_labels",
        "limit",
        "fraction",
        "public_fraction",
        "val_fraction",
        "test_fraction",
        "no_public_split",
        "split_from",
        "projection",
        "public_from",
        "allow_nonprivate_choice",
        "weights",
        "trust_checkpoint",
        "pretrained",
        "warm_start",
        "public_labelled",
        "other_public",
        "private_fraction",
        "embeddings",
        "allow_overlap",
        "ledger",
        "private",
        "public",
        "probe_weights",
        "var",
        "key",
        "signature",
        "evaluation",
        "audit",
    ),
    "Model": (
        "backbone",
        "resize",
        "crop",
        "precision",
        "method",
        "k",
        "k_max",
        "ridge",
        "standardize",
        "second_moment",
        "components",
        "arch",
        "probe",
        "trainable",
        "probe_size",
        "probe_bias",
        "normalize_rows",
        "max_samples",
        "mode",
        "pairs",
        "xi_threshold",
        "fmt",
        "features_only",
    ),
    "Privacy": (
        "eps",
        "max_tpr",
        "at_fpr",
        "prior",
        "delta",
        "n_public",
        "accountant",
        "clip",
        "noise_seed",
        "dp_eps",
        "dp_delta",
        "dp_mechanism",
        "gibbs_sweeps",
        "allow_private_labels",
        "alpha",
        "beta",
        "canaries",
        "guesses",
        "confidence",
        "white_box",
        "plant",
        "neighbours",
        "train",
        "fit_pca",
        "export",
        "runs",
        "remove_row",
        "privacy_unit",
        "canary_rows",
        "remove_person",
    ),
    "Training": (
        "lr",
        "steps",
        "batch_size",
        "momentum",
        "weight_decay",
        "ema",
        "seed",
        "engine",
        "grad_sample_mode",
        "max_physical_batch",
    ),
    "Selection": ("select", "trials", "trials_shape", "score_share", "val", "cell"),
    "Running": (
        "device",
        "workers",
        "shard",
        "merge",
        "engine",
        "address",
        "actors",
        "resume",
        "skip_bad",
        "verify",
        "list_backbones",
        "list_sources",
        "workdir",
        "runtime",
        "list_pipelines",
        "dry_run",
    ),
    "Output": (
        "out",
        "force",
        "track_to",
        "as_json",
        "plot",
        "csv",
        "markdown",
        "plot_xi",
        "plot_spectrum",
        "methods_plot",
        "fraction_plot",
        "public_plot",
        "dimension_plot",
        "by_cell",
        "help",
        "sign",
    ),
}
PANEL_OF = {name: panel for panel, names in _PANEL_OF_NAME.items() for name in names}


def panel_of(parameter) -> str | None:
    """The panel a parameter is listed under; None for an option whose name no panel claims."""
    if parameter.param_type_name == "argument":
        return "Arguments"
    return getattr(parameter, "rich_help_panel", None) or PANEL_OF.get(parameter.name)


class PanelledCommand(TyperCommand):
    """A typer command whose help lists its options panel by panel, as plain text."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "rich_markup_mode": None})

    def format_help_text(self, ctx, formatter) -> None:
        paragraphs = inspect.cleandoc(self.help or "").partition("\f")[0].split("\n\n")
        # inside the indentation written below
        width = max(formatter.width - formatter.current_indent - 2, 40)
        text = "\n\n".join(shell_lines(p, width) if p.startswith("Example:") else p for p in paragraphs)
        if text:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(text)

    def format_options(self, ctx, formatter) -> None:
        panels: dict[str, list[tuple[str, str]]] = {}
        for parameter in self.get_params(ctx):
            record = parameter.get_help_record(ctx)
            if record is not None:
                panels.setdefault(panel_of(parameter) or "Options", []).append(record)
        for panel in sorted(
            panels, key=lambda p: PANEL_ORDER.index(p) if p in PANEL_ORDER else len(PANEL_ORDER)
        ):
            with formatter.section(panel):
                formatter.write_dl(panels[panel])


def shell_lines(paragraph: str, width: int) -> str:
    """One command as lines of at most `width` characters, continued with a backslash, kept as they are
    (click's \\b) rather than re-wrapped."""
    lines = [""]
    for word in paragraph.split():
        if lines[-1].strip() and len(lines[-1]) + 1 + len(word) > width - 2:
            lines[-1] += " \\"
            lines.append("    ")
        lines[-1] += ("" if not lines[-1].strip() else " ") + word
    return "\b\n" + "\n".join(lines)
