"""``locomo-kit stats``: validate the dataset and print its statistics."""

from __future__ import annotations

import argparse
import json

from locomo_kit.dataset import dataset_stats, load_dataset, select


def add_parser(sub: argparse._SubParsersAction) -> None:
    stats = sub.add_parser("stats", help="validate the dataset and print its statistics",
                           description="Validate the dataset and print its statistics as JSON.")
    stats.add_argument("--dataset", help="path to locomo10.json (default data/locomo10.json)")
    stats.add_argument("--sample", default="all", help="'all', a sample id, or a comma-separated list")
    stats.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    stats = dataset_stats(select(load_dataset(args.dataset), args.sample))
    print(json.dumps(stats, indent=2))
    return 0
