"""The run folder's file names, each spelled here only.

Why a module of its own, below :class:`harness.run_folder.run_dir.RunDir`: the records' readers and writers
(``report`` names the spot-check file it summarises) need a name without importing the owner, which imports them.
Every path is built by ``RunDir``; a module that needs only a name (a report block, a CSV's label) imports it from
here.
"""

RESPONSES = "responses.jsonl"
TORN_RESPONSES = "responses.torn.jsonl"
SCORES = "scores.jsonl"
REPORT = "report.json"
RUN_INFO = "run.json"
LEADERBOARD_MD = "leaderboard.md"
REPORT_HTML = "report.html"
SPOTCHECK = "spotcheck.json"
JUDGEMENTS = "spotcheck/judgements.jsonl"
CLAIMS = "spotcheck/claims.jsonl"  # --mode claims: every claim with its verdict and evidence
# several citations per answer: each cited sentence's support by its own and the answer's other cited articles
CITATION_SUPPORT = "spotcheck/citation_support.jsonl"
QUALITY = "spotcheck/quality.jsonl"  # --quality: each checked answer's GroUSE-style grades
REVIEW_CSV = "spotcheck_review.csv"
CLAIMS_REVIEW_CSV = "spotcheck_claims_review.csv"  # --mode claims: one row per claim (segment labels stay apart)
CALIBRATION = "calibration.json"
BATCHES = "batches.jsonl"
MALFORMED = "malformed.jsonl"
UNMATCHED = "unmatched.jsonl"
QUESTIONS = "questions.csv"
EXPORTS = "exports.jsonl"  # every export of the run tried (harness.run_folder.exports_log)
RESULTS_PARQUET = "results.parquet"  # grace export --to parquet, by default
MLFLOW_DB = "mlflow/mlflow.db"  # grace export --to mlflow with no tracking URI: a local store (MLflow's sqlite backend)
WANDB = "wandb"  # grace export --to wandb, offline: W&B names the folder itself when given the run folder as its dir
LOCK = ".grace.lock"
VIEW_INDEX = "view-index.sqlite"  # grace view's index of a run: kept in grace's cache folder, never in the run folder
