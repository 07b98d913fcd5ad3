"""Pictures: attention heatmaps, learning curves and BLEU by sentence length.

The one module that imports matplotlib, and only inside its functions, so that importing
nmt_cli or its command line never loads it. Figures are drawn on matplotlib's Agg canvas (no
window, no display) without pyplot's global state. Each function takes plain numbers, the
JSON form of what it draws, and a path whose suffix (.png or .svg) picks the format:

    draw_attention(maps, path)        AttentionMaps.to_json()  (nmt_cli/attention_maps.py)
    draw_curves(runs, path)           [LearningCurve.to_json(), ...]  (learning_curves.py)
    draw_bleu_by_length(buckets, path, title, basis)   [{"bucket", "sentences", "bleu"}, ...]
    draw_bleu_by_length_of_systems(systems, path, title)   {name: buckets, ...}
    draw_word_map(points, path, title)   [{"label", "x", "y"}, ...]  (word_vectors.py)

and `read_png(path)` reads one back as pixels.
"""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

from .errors import UserError
from .files import atomic_write

PICTURE_SUFFIXES = (".png", ".svg")
DPI = 100  # small files: a committed PNG stays well under 200 KB
MAX_SIZE = 15.0  # inches across and down: larger grids get smaller cells
COLOR_MAP = "viridis"
ALIGNMENT_COLOR = "#ff3b30"  # the outline of the cells word alignment picks: red on viridis


def check_picture_path(path: Path | str) -> Path:
    """`path`, if its suffix names a format we write (checked before any work is done)."""
    path = Path(path)
    if path.suffix.lower() not in PICTURE_SUFFIXES:
        raise UserError(f"-o {path}: a picture's name ends in "
                        f"{' or '.join(PICTURE_SUFFIXES)}")
    return path


def new_figure(width: float, height: float):
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:  # leave a notebook's own backend alone
        matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def save(figure, path: Path) -> Path:
    """Write `figure` to `path` (atomically: a reader never sees half a picture)."""
    kind = path.suffix.lower().lstrip(".")
    metadata = {"Date": None} if kind == "svg" else None  # the same numbers, the same file
    atomic_write(path, lambda tmp: figure.savefig(tmp, format=kind, dpi=DPI,
                                                  metadata=metadata))
    return path


def read_png(path: Path):
    """A PNG file's pixels: a (height, width, 3) float array of RGB values in [0, 1]."""
    from matplotlib.image import imread

    return imread(path, format="png")[..., :3]


# Attention heatmaps ------------------------------------------------------------------------

AXIS_NAMES = {"cross": ("source", "output"), "encoder": ("source", "source"),
              "decoder": ("decoder input", "decoder input")}  # kind -> (x axis, y axis)


def draw_attention(maps: dict, path: Path | str) -> Path:
    """Heatmaps of AttentionMaps.to_json(): keys along x, queries along y, one panel per map
    (a row per layer when there are several), one colour bar for all (weights 0..1)."""
    path = check_picture_path(path)
    panels = maps["maps"]
    rows, cols, cell = attention_grid(maps)
    width, height = attention_figure_size(maps)
    figure = new_figure(width, height)
    axes = figure.subplots(rows, cols, squeeze=False)
    for index, panel in enumerate(panels):
        labels = (index + cols >= len(panels), index % cols == 0)  # nothing below; first
        image = draw_heatmap(axes[index // cols][index % cols], panel, maps, cell, labels)
    for ax in axes.flat[len(panels):]:
        ax.set_axis_off()
    figure.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    columns = title_columns(width)
    translation = textwrap.shorten(maps["translation"], 3 * columns, placeholder=" …")
    title = textwrap.fill(f"“{translation}”", columns)
    aligned = ("" if not maps.get("alignment_cells") else "\n" + textwrap.fill(
        f"red squares: word alignment ({alignment_read(maps)})", columns))
    figure.suptitle(f"{maps['run']}: {maps['model']}, {maps['kind']} attention\n{title}{aligned}",
                    fontsize=10)
    return save(figure, path)


def alignment_read(maps: dict) -> str:
    """The attention word alignment reads: a layer's heads, or a GRU's one attention."""
    if gru(maps):
        return "its one attention"
    heads = maps.get("alignment_heads") or 0  # 0: every head (and so in maps made before)
    read = {0: "heads averaged", 1: "head 1"}.get(heads, f"heads 1-{heads} averaged")
    return f"layer {maps['alignment_layer']}, {read}"


def gru(maps: dict) -> bool:
    """Whether the maps are a GRU's: one attention, without layers or heads."""
    return maps["model"].startswith("gru")


def attention_grid(maps: dict) -> tuple[int, int, float]:
    """Rows and columns of panels (a row per layer when there are several, else about
    square), and the inches a piece gets (less in large grids)."""
    panels = maps["maps"]
    layers = len({m["layer"] for m in panels})
    cols = len(panels) // layers if layers > 1 else math.ceil(math.sqrt(len(panels)))
    rows = math.ceil(len(panels) / cols)
    across, down = len(maps["columns"]) + 4, len(maps["rows"]) + 4  # pieces, and labels
    return rows, cols, min(0.2, MAX_SIZE / (cols * across), MAX_SIZE / (rows * down))


def attention_figure_size(maps: dict) -> tuple[float, float]:
    """Width and height in inches (DPI pixels each)."""
    rows, cols, cell = attention_grid(maps)
    return (cols * (len(maps["columns"]) + 4) * cell + 1.2,
            rows * (len(maps["rows"]) + 4) * cell + 0.9)


def draw_heatmap(ax, panel: dict, maps: dict, cell: float, labels: tuple[bool, bool]):
    """One map; `labels`: whether to name the pieces along x and along y (outer panels
    only: every panel of a figure has the same pieces)."""
    font = max(6.0, min(7.0, cell * 34))  # points: smaller cells, smaller labels, to 6 pt
    image = ax.imshow(panel["weights"], cmap=COLOR_MAP, vmin=0.0, vmax=1.0,
                      interpolation="nearest", aspect="equal")
    if maps.get("alignment_cells"):  # a square around each cell, as wide as the cell
        rows, columns = zip(*maps["alignment_cells"])
        ax.scatter(columns, rows, marker="s", s=(cell * 72 * 0.85) ** 2, facecolors="none",
                   edgecolors=ALIGNMENT_COLOR, linewidths=max(0.4, cell * 4))
    x_name, y_name = AXIS_NAMES[maps["kind"]]
    # where a cell is less high than a label, every k-th piece is named, so that none overlap
    every = max(1, math.ceil(font / 72 * 1.15 / cell))
    if labels[0]:
        shown = range(0, len(maps["columns"]), every)
        ax.set_xticks(shown, [maps["columns"][i] for i in shown], rotation=90, fontsize=font)
        ax.set_xlabel(x_name if every == 1 else f"{x_name} (one piece in {every} named)",
                      fontsize=8)
    else:
        ax.set_xticks([])
    if labels[1]:
        shown = range(0, len(maps["rows"]), every)
        ax.set_yticks(shown, [maps["rows"][i] for i in shown], fontsize=font)
        ax.set_ylabel(y_name if every == 1 else f"{y_name} (one piece in {every} named)",
                      fontsize=8)
    else:
        ax.set_yticks([])
    if not gru(maps):  # a GRU has one attention: no layer or head to name
        ax.set_title(f"layer {panel['layer']}, head {panel['head']}", fontsize=9)
    return image


# Learning curves ---------------------------------------------------------------------------

CURVES_SIZE = (13.0, 7.5)  # inches: six panels, 2 x 3
CURVE_PANELS = (  # (y label, training series, validation series, against minutes), each panel
    ("loss", "loss", "val_loss", False), ("METRIC", None, "val_METRIC", False),
    ("learning rate", "lr", None, False), ("loss", "loss", "val_loss", True),
    ("METRIC", None, "val_METRIC", True), ("tokens/s", "tokens_per_s", None, False),
)  # METRIC: the validation score drawn (draw_curves)
METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF"}


LANGUAGE_MARKERS = "s^vDP*Xph<>"  # the validation BLEU of each target language


def draw_curves(runs: list[dict], path: Path | str, metric: str = "bleu") -> Path:
    """Learning curves of one or more runs (LearningCurve.to_json() each), overlaid: a colour
    per run; training solid, validation dashed with markers; the validation score drawn is
    `metric` (bleu or chrf)."""
    path = check_picture_path(path)
    figure = new_figure(*CURVES_SIZE)
    from matplotlib.ticker import MaxNLocator

    axes = list(figure.subplots(2, 3, squeeze=False).flat)
    for ax, (label, train_key, val_key, by_time) in zip(axes, CURVE_PANELS):
        val_key = val_key and val_key.replace("METRIC", metric)
        for color, run in enumerate(runs):
            draw_series(ax, run, train_key, val_key, by_time, f"C{color % 10}")
        ax.set_xlabel("time (minutes, validations included)" if by_time else "step")
        if not by_time:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(label.replace("METRIC", METRIC_NAMES[metric]))
        ax.grid(alpha=0.3)
    # the training loss is the one optimized, label smoothing (and guided alignment) included;
    # the validation loss is the cross-entropy alone, and so lower for the same model
    axes[0].plot([], [], color="gray", label="training (loss as optimized: label-smoothed)")
    axes[0].plot([], [], color="gray", linestyle="--", marker="o",
                 label="validation (loss: cross-entropy alone)")
    axes[0].legend(fontsize=8, handlelength=3)
    if any(run.get(f"val_{metric}_by_language") for run in runs):
        axes[1].legend(fontsize=8, handlelength=3)  # the languages' markers
    handles = [axes[2].lines[i] for i in range(len(runs))]
    figure.legend(handles, [run["run"] for run in runs], loc="outside upper center",
                  ncols=min(len(runs), 3), fontsize=9)
    return save(figure, path)


def draw_series(ax, run: dict, train_key: str | None, val_key: str | None, by_time: bool,
                color: str) -> None:
    if train_key:
        x = run["minutes"] if by_time else run["steps"]
        ax.plot(x, run[train_key], color=color, linewidth=1.0, alpha=0.85)
    if val_key and run["val_steps"]:
        x = run["val_minutes"] if by_time else run["val_steps"]
        ax.plot(x, gaps(run[val_key]), color=color, linestyle="--", marker="o", markersize=3)
        # and each of several target languages, dotted
        for marker, (language, scores) in zip(LANGUAGE_MARKERS,
                                              run.get(f"{val_key}_by_language", {}).items()):
            ax.plot(x, gaps(scores), color=color, linestyle=":", marker=marker, markersize=4,
                    label=f"{language} (validation)")


def gaps(values: list[float | None]) -> list[float]:
    """A series with its missing values (None: not logged) as gaps in the line."""
    return [math.nan if value is None else value for value in values]


def title_columns(width: float) -> int:
    """The characters of a 10-point title that fit across a figure `width` inches wide:
    about 8 pixels each, with margin."""
    return max(30, int(width * DPI / 8))


def fitted(title: str, figure) -> str:
    """A title wrapped to its figure's width, which would otherwise cut a long one (a path)
    at both sides."""
    return textwrap.fill(title, title_columns(figure.get_figwidth()))


# BLEU by sentence length -------------------------------------------------------------------

def draw_bleu_by_length(buckets: list[dict], path: Path | str, title: str,
                        basis: str = "source") -> Path:
    """A bar of BLEU per length bucket ({"bucket": "1-10", "sentences": 120, "bleu": 31.4}),
    each labelled with its number of sentences; the lengths are the `basis` side's."""
    path = check_picture_path(path)
    figure = new_figure(max(4.5, 0.8 * len(buckets) + 2.0), 3.8)
    ax = figure.subplots()
    labels = [b["bucket"] for b in buckets]
    bars = ax.bar(labels, [b["bleu"] for b in buckets], color="C0")
    ax.bar_label(bars, [f"{b['sentences']:,}" for b in buckets], fontsize=8, padding=2)
    ax.set_xlabel(f"{basis} length in words (bar label: sentences)")
    ax.set_ylabel("BLEU")
    ax.set_ylim(0, max([b["bleu"] for b in buckets] + [1.0]) * 1.15)
    ax.set_title(fitted(title, figure), fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return save(figure, path)


def draw_bleu_by_length_of_systems(systems: dict[str, list[dict]], path: Path | str,
                                   title: str) -> Path:
    """Bars of BLEU per length bucket, one bar per system in each bucket, side by side: how
    each system holds up as sentences grow (bench/bottleneck.py)."""
    path = check_picture_path(path)
    labels = list(dict.fromkeys(b["bucket"] for buckets in systems.values() for b in buckets))
    sizes = {b["bucket"]: b["sentences"] for buckets in systems.values() for b in buckets}
    figure = new_figure(max(5.0, 1.2 * len(labels) + 2.5), 3.8)
    ax = figure.subplots()
    width = 0.8 / len(systems)
    for n, (name, buckets) in enumerate(systems.items()):
        bleu = {b["bucket"]: b["bleu"] for b in buckets}
        ax.bar([i + (n - (len(systems) - 1) / 2) * width for i in range(len(labels))],
               [bleu.get(label, 0.0) for label in labels], width, label=name, color=f"C{n}")
    ax.set_xticks(range(len(labels)), [f"{label}\n({sizes[label]:,})" for label in labels])
    ax.set_xlabel("source length in words (sentences)")
    ax.set_ylabel("BLEU")
    ax.set_title(fitted(title, figure), fontsize=10)
    ax.legend(fontsize=8, ncols=min(len(systems), 5))
    ax.grid(axis="y", alpha=0.3)
    return save(figure, path)


# Word vectors ------------------------------------------------------------------------------

def draw_word_map(points: list[dict], path: Path | str, title: str,
                  highlight: str | None = None) -> Path:
    """A labelled point per vector ({"label": "dog", "x": 0.8, "y": -0.1}: its first two
    principal components, word_vectors.principal_components); the point labelled `highlight`
    (the word whose neighbours these are) in another colour."""
    path = check_picture_path(path)
    return save(word_map_figure(points, title, highlight), path)


# Where a point's label goes, in points from the point: above right first, then the other
# corners, then beside it; the first place that covers no other label and no point is taken.
LABEL_PLACES = ((4, 3, "left", "bottom"), (4, -3, "left", "top"), (-4, 3, "right", "bottom"),
                (-4, -3, "right", "top"), (6, 0, "left", "center"), (-6, 0, "right", "center"),
                (0, 6, "center", "bottom"), (0, -6, "center", "top"))


def word_map_figure(points: list[dict], title: str, highlight: str | None = None):
    figure = new_figure(7.0, 6.0)
    ax = figure.subplots()
    for point in points:
        special = point["label"] == highlight
        ax.scatter(point["x"], point["y"], s=40 if special else 18,
                   color="C3" if special else "C0", zorder=2)
    ax.margins(0.15)  # room for the labels of the outermost points
    ax.set_xlabel("first principal component")
    ax.set_ylabel("second principal component")
    ax.set_title(fitted(title, figure), fontsize=10)
    ax.grid(alpha=0.3)
    figure.draw_without_rendering()  # lays the figure out: where each point lies is now known
    figure.set_layout_engine("none")  # and stays, so that the labels placed keep their places
    # the highlighted word is labelled first, so that it gets the first choice of place
    ordered = sorted(points, key=lambda point: point["label"] != highlight)
    place_labels(ax, ordered, highlight)
    return figure


def place_labels(ax, points: list[dict], highlight: str | None) -> None:
    """Label each point at the first of LABEL_PLACES that overlaps no label placed before it
    and no point; where none is free, at the one that overlaps least."""
    from matplotlib.transforms import Bbox

    dots = [ax.transData.transform((point["x"], point["y"])) for point in points]
    taken = [Bbox.from_extents(x - 4, y - 4, x + 4, y + 4) for x, y in dots]  # the points
    for point in points:
        best = None
        for dx, dy, across, down in LABEL_PLACES:
            label = ax.annotate(point["label"], (point["x"], point["y"]),
                                textcoords="offset points", xytext=(dx, dy), ha=across,
                                va=down, fontsize=9,
                                fontweight="bold" if point["label"] == highlight else "normal")
            box = label.get_window_extent()
            covered = sum(overlap(box, other) for other in taken)
            if best is not None and covered >= best[0]:
                label.remove()
                continue
            if best is not None:
                best[1].remove()
            best = (covered, label, box)
            if covered == 0:
                break
        taken.append(best[2])


def overlap(a, b) -> float:
    """The area two boxes share (0 when they do not meet)."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)
