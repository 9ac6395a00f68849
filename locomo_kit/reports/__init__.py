"""Reading run folders into tables, pages, figures, comparisons and exports: report.md and report.html with
their figures, ``compare`` across runs, the leaderboard's tables and page, the accuracy-against-context curve, one
row per question, the pending-call census and the judge findings."""

from locomo_kit.reports.comparison import (
                                           CompareError,
                                           compare,
                                           comparison_figure,
                                           find_run,
                                           parse_runs,
                                           statements,
                                           table_lines,
                                           write_comparison,
)
from locomo_kit.reports.curve import curve_points, write_curve
from locomo_kit.reports.export_rows import export_run, question_rows
from locomo_kit.reports.figures import save_figure, write_figures
from locomo_kit.reports.flips import flip_counts, flip_lines, mcnemar_exact
from locomo_kit.reports.judge_findings import console_lines, run_summary
from locomo_kit.reports.leaderboard_page import (
                                           leaderboard_lines,
                                           paired_lines,
                                           paired_rows,
                                           questions_across,
                                           quoted_lines,
                                           quoted_rows,
                                           write_leaderboard,
)
from locomo_kit.reports.markdown import build_report
from locomo_kit.reports.overview import category_table, report_lines
from locomo_kit.reports.pending import pending_calls
from locomo_kit.reports.question_table import RunRef, build_question_table, question_frame
from locomo_kit.reports.runs_explorer import cross_runs, write_runs_page
from locomo_kit.reports.summary import summarize_run

__all__ = ["CompareError", "RunRef", "build_question_table", "build_report", "category_table", "compare", "comparison_figure",
           "console_lines", "cross_runs", "curve_points", "export_run", "find_run", "flip_counts", "flip_lines",
           "leaderboard_lines", "mcnemar_exact", "paired_lines", "paired_rows", "parse_runs", "pending_calls",
           "question_frame", "question_rows", "questions_across", "quoted_lines", "quoted_rows", "report_lines", "run_summary",
           "save_figure", "statements", "summarize_run", "table_lines", "write_comparison", "write_curve",
           "write_figures", "write_leaderboard", "write_runs_page"]
