"""Writing result tables as CSV and Markdown side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd


def write_table(df: pd.DataFrame, csv_path: str | Path, md_path: str | Path | None = None) -> None:
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv_path, index=False)
    if md_path is not None:
        Path(md_path).write_text(to_markdown(df) + "\n")


def to_markdown(df: pd.DataFrame, floatfmt: str = ".3g") -> str:
    """A GitHub table without the optional ``tabulate`` dependency."""

    def cell(v) -> str:
        # a pipe inside a cell (the quartet class "(1,0|1,0)") would end the cell
        return (format(v, floatfmt) if isinstance(v, float) else str(v)).replace("|", "\\|")

    head = "| " + " | ".join(cell(c) for c in df.columns) + " |"
    rule = "| " + " | ".join("---" for _ in df.columns) + " |"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


def write_json(obj, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=str) + "\n")
