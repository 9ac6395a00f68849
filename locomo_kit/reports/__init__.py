"""Reading run folders into tables, pages, figures, comparisons and exports: report.md and report.html with
their figures, ``compare`` across runs, one row per question, the pending-call census and the judge findings."""

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
from locomo_kit.reports.export_rows import export_run, question_rows
from locomo_kit.reports.figures import save_figure, write_figures
from locomo_kit.reports.judge_findings import console_lines, run_summary
from locomo_kit.reports.markdown import build_report
from locomo_kit.reports.pending import pending_calls
from locomo_kit.reports.summary import summarize_run

__all__ = ["CompareError", "build_report", "compare", "comparison_figure", "console_lines", "export_run",
           "find_run", "parse_runs", "pending_calls", "question_rows", "run_summary", "save_figure", "statements",
           "summarize_run", "table_lines", "write_comparison", "write_figures"]
