"""Entry point for spark-submit (and `python -m rebalance_doctor.spark_job`).

    spark-submit --master yarn --deploy-mode client \\
        "$(python -c 'import rebalance_doctor.spark_job as j; print(j.__file__)')" \\
        batch hdfs:///logs/kafka/ --out hdfs:///analysis/rebalances

The arguments are those of the command line (``batch``, ``events``, ``analyze``); ``events``
and ``analyze`` run with ``--engine spark`` unless told otherwise. The session comes from
spark-submit (master, --conf, --py-files ...): the commands use the active session and leave
it to spark-submit, so ``--master``/``--conf`` belong to spark-submit here, not to the command.
Executors need the ``rebalance_doctor`` package importable (pip-installed on the nodes, or a
zip given with --py-files); they do not need the patterns/ directory: the driver ships it.
"""

from __future__ import annotations

import sys

SPARK_COMMANDS = ("events", "analyze")


def arguments(argv: list[str]) -> list[str]:
    """The command line to run: --engine spark added to events/analyze when not given."""
    if argv and argv[0] in SPARK_COMMANDS and not any(a == "--engine" or a.startswith("--engine=") for a in argv):
        return [argv[0], "--engine", "spark", *argv[1:]]
    return list(argv)


def main(argv: list[str] | None = None) -> None:
    from rebalance_doctor.cli.app import app  # absolute: spark-submit runs this file as a script
    from rebalance_doctor.engines import spark as spark_engine

    args = arguments(sys.argv[1:] if argv is None else argv)
    # Created here so that spark-submit's settings apply; the commands find it active and reuse it.
    spark = spark_engine.create_session()
    try:
        app(args=args, prog_name="rebalance_doctor.spark_job")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
