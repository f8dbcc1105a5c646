"""``grace demo``: the whole pipeline offline on the bundled sample benchmark.

Build the sample KB from its mixed documents, evaluate retrieval, run the
offline baselines, score them and write the leaderboard and HTML report,
spot-check the hits with the lexical judge, and turn the run back on the gold
set: pre-labels from the models' consensus and an audit of the labels. No key,
no network.
"""

from __future__ import annotations

from pathlib import Path

import click

from harness.core.errors import GraceError

COMMANDS = {  # the grace commands this module defines (each an attribute of the same name), for grace --help
    "demo": "Run the offline demo on the bundled sample benchmark.",
}


SAMPLE = Path(__file__).resolve().parents[2] / "benchmarks" / "sample"


@click.command()
@click.option("--out", default="demo-output", show_default=True, type=click.Path(path_type=Path), help="Folder for the KB, run and report.")
@click.option("--sample", default=str(SAMPLE), show_default=False, type=click.Path(path_type=Path), help="Sample benchmark folder (handbook/ and gold.csv).")
def demo(out: Path, sample: Path) -> None:
    """Run the offline demo on the bundled sample benchmark."""
    from harness.cli.app import cli

    handbook, gold = sample / "handbook", sample / "gold.csv"
    if not handbook.exists() or not gold.exists():
        raise GraceError(f"{sample}: sample benchmark not found (needs handbook/ and gold.csv); run from a grace checkout")
    ctx = click.get_current_context()

    def grace(*args: object) -> None:
        """Run a grace command exactly as a user would type it."""
        name, *rest = [str(a) for a in args]
        cmd = cli.get_command(ctx, name)
        cmd.main(args=rest, prog_name=f"grace {name}", standalone_mode=False)

    def step(title: str) -> None:
        click.secho(f"\n== {title}", bold=True)

    step(f"1/6 Build the KB from {handbook}")
    grace("kb", "build", handbook, "--out", out / "kb")
    step("2/6 Retrieval quality on the gold set")
    grace("kb", "eval", out / "kb", "--gold", gold, "-k", "1,3,5", "--show-misses", "5")
    step("3/6 Run the offline baselines and score them")
    grace("run", "--kb", out / "kb", "--gold", gold, "--model", "baseline:top1", "--model", "baseline:threshold", "--out", out / "run")
    step("4/6 Spot-check the hits for hallucination (offline lexical judge)")
    grace("spotcheck", "run", out / "run", "--kb", out / "kb", "--judge", "baseline:lexical", "--sample", "20")
    step("5/6 Gold labels from the run: the models' consensus as pre-labels, and the labels they contradict")
    # --force: the demo's folder is its own, and a second demo replaces its files (keeping the last as .bak)
    grace("annotations", "suggest", gold, "--kb", out / "kb", "--run", out / "run", "--out", out / "suggestions.csv",
          "--force")
    grace("annotations", "audit", gold, "--kb", out / "kb", "--run", out / "run", "--out", out / "suspects.csv",
          "--limit", "5", "--force")
    step("6/6 Leaderboard and report")
    grace("report", out / "run", "--kb", out / "kb")
