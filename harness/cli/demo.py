"""``grace demo``: the whole pipeline offline on the bundled sample benchmark.

Build the sample KB from its mixed documents, evaluate retrieval, run the
offline baselines, score them and write the leaderboard and HTML report, and
spot-check the hits with the lexical judge. No key, no network.
"""

from __future__ import annotations

from pathlib import Path

import click

from kb_builder.errors import GraceError

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
    step = lambda title: click.secho(f"\n== {title}", bold=True)  # noqa: E731
    step(f"1/4 Build the KB from {handbook}")
    ctx.invoke(cli.get_command(ctx, "kb").get_command(ctx, "build"), source=handbook, out=out / "kb", articles_file=None,
               max_tokens=800, min_tokens=80, embedder="bm25")
    step("2/4 Retrieval quality on the gold set")
    ctx.invoke(cli.get_command(ctx, "kb").get_command(ctx, "eval"), kb_dir=out / "kb", gold=gold, ks="1,3,5", embedder=None, show_misses=5)
    step("3/4 Run the offline baselines, score them, write the report")
    run_cmd = cli.get_command(ctx, "run")
    params = {p.name: p.get_default(ctx) for p in run_cmd.params}
    params.update(kb_dir=out / "kb", gold_path=gold, models=("baseline:top1", "baseline:threshold"), out=out / "run")
    ctx.invoke(run_cmd, **params)
    spot = cli.get_command(ctx, "spotcheck")
    if spot is not None:
        step("4/4 Spot-check the hits for hallucination (offline lexical judge)")
        args = ["run", str(out / "run"), "--kb", str(out / "kb"), "--judge", "baseline:lexical", "--sample", "20"]
        spot.main(args=args, standalone_mode=False)
    click.secho(f"\nDone. Open {out / 'run' / 'report.html'} in a browser.", bold=True)
