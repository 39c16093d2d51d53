"""Report blocks and their two renderings: Markdown with image links, and self-contained HTML."""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Paragraph:
    text: str  # may use `code` and **bold**


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Table:
        return cls([str(c) for c in frame.columns], [[cell(v) for v in row] for row in frame.itertuples(index=False)])


@dataclass
class Image:
    path: Path
    caption: str


Block = Heading | Paragraph | Bullets | Table | Image

# A table wider than this many columns is split into tables of its first column and the next ones, so that
# no table is wider than a 1280 px screen and the page never scrolls sideways.
MAX_COLUMNS = 7


def split_wide(table: Table, limit: int = MAX_COLUMNS) -> list[Table]:
    """``table`` as one or more tables of at most ``limit`` columns, each led by the first (the row's key)."""
    if len(table.columns) <= limit:
        return [table]
    rest = list(range(1, len(table.columns)))
    step = limit - 1
    return [
        Table(
            [table.columns[0], *(table.columns[i] for i in part)],
            [[row[0], *(row[i] for i in part)] for row in table.rows],
        )
        for part in (rest[k : k + step] for k in range(0, len(rest), step))
    ]


def narrow(blocks: list[Block]) -> list[Block]:
    return [part for block in blocks for part in (split_wide(block) if isinstance(block, Table) else [block])]


def cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_markdown(blocks: list[Block]) -> str:
    out = []
    for block in narrow(blocks):
        if isinstance(block, Heading):
            out.append(f"{'#' * block.level} {block.text}")
        elif isinstance(block, Paragraph):
            out.append(block.text)
        elif isinstance(block, Bullets):
            out.append("\n".join(f"- {item}" for item in block.items))
        elif isinstance(block, Table):
            lines = [block.columns, ["---"] * len(block.columns), *block.rows]
            out.append("\n".join("| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in lines))
        else:
            out.append(f"![{block.caption}]({block.path.name})\n\n*{block.caption}*")
    return "\n\n".join(out) + "\n"


def inline_html(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)


NUMBER = re.compile(r"[-+]?[\d.,]+(e[-+]?\d+)?\s?[%×]?|—")


def table_cell(text: str) -> str:
    """Numbers align right, so their digits line up; words align left, as they are read."""
    kind = "" if NUMBER.fullmatch(text) else ' class="text"'
    return f"<td{kind}>{html.escape(text)}</td>"


def render_html(blocks: list[Block], title: str) -> str:
    """One file that opens anywhere: images are embedded as base64 data URIs."""
    out = []
    for block in narrow(blocks):
        if isinstance(block, Heading):
            out.append(f"<h{block.level}>{inline_html(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            out.append(f"<p>{inline_html(block.text)}</p>")
        elif isinstance(block, Bullets):
            out.append("<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{html.escape(c)}</th>" for c in block.columns)
            body = "".join("<tr>" + "".join(table_cell(c) for c in row) + "</tr>" for row in block.rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            data = base64.b64encode(block.path.read_bytes()).decode("ascii")
            out.append(
                f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(block.caption)}">'
                f"<figcaption>{inline_html(block.caption)}</figcaption></figure>"
            )
    style = (
        "*{box-sizing:border-box}"
        "body{font-family:system-ui,sans-serif;max-width:70em;margin:2em auto;padding:0 1em;line-height:1.4}"
        "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}"
        "th,td{border:1px solid #ccc;padding:0.25em 0.6em;text-align:right;overflow-wrap:anywhere}"
        "th{background:#f3f3f3}td.text,th{text-align:left}table{max-width:100%}code{overflow-wrap:anywhere}p,li{overflow-wrap:anywhere}"
        "img{max-width:100%;height:auto}figcaption{font-style:italic;color:#555}"
        "code{background:#f3f3f3;padding:0 0.2em}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n"
    )
