"""The typer application: it only wires the commands together."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from typing import Annotated, NoReturn, Optional

import typer
import typer.exceptions

from .. import __version__
from ..core.exceptions import Terminated, is_machine_error
from ..core.process import tune_for_reading
from . import streams  # first: before any module reads sys.stderr
from . import analyze, batch, common, events, query
from .output import quiet_stdout
from . import patterns as patterns_cli
from . import rules as rules_cli

EPILOG = """Examples:

  rebalance-doctor analyze logs/

  rebalance-doctor events logs/ --out events.parquet --jobs 2

  rebalance-doctor batch s3a://bucket/kafka-logs/ --out /data/rebalances --master yarn

  kubectl logs my-streams-pod | rebalance-doctor events - --out -

  rebalance-doctor query "select trigger_kind, count(*) from rebalances group by 1" logs/

Compiled pattern regexes and parsed pattern files are kept in ~/.cache/rebalance-doctor, private
to the user and sealed (an entry that does not verify is rebuilt, never loaded);
REBALANCE_DOCTOR_CACHE=DIR moves it, =off turns it off. It only saves start-up time (~0.5 CPU-s
per process: analyze on a small incident 1.6 CPU-s with it, 2.2 without).

Exit codes (every command): 0 clean; 1 findings at or above --fail-on; 2 usage error (an output
path that cannot be written, read-only included); 3 input was lost (corrupt, truncated,
unreadable) and nothing at or above --fail-on was found; 4 internal error (run again with --debug
for the traceback); 5 something the run needs is missing (an extra, Java, Spark) or the disk
filled up while writing. When several hold, the first of 4, 2, 5, 1, 3.
"""

app = typer.Typer(
    name="rebalance-doctor",
    help="Log forensics for Apache Kafka consumer-group rebalance incidents.",
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rebalance-doctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_callback(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="On an internal error, print the traceback "
                                                        f"(also {common.DEBUG_VARIABLE}=1).")] = False,
) -> None:
    """Log forensics for Apache Kafka consumer-group rebalance incidents."""
    if debug:
        common.debug = True


app.command("analyze")(analyze.analyze)
app.command("events")(events.events)
app.command("batch")(batch.batch)
app.command("query", epilog=query.EPILOG)(query.query)
app.add_typer(rules_cli.app, name="rules")
app.add_typer(patterns_cli.app, name="patterns")
app.command("schema")(events.schema)


def main() -> None:
    """The console script: run the command, then leave without tearing the interpreter down.

    Errors the commands know are turned into their exit codes there (``common.errors``); what
    reaches here is a bug, reported in one line as an internal error (4)."""
    tune_for_reading()
    streams.say_if_stdout_was_closed()
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stopped)
    try:
        code = app(standalone_mode=False)
    except SystemExit as done:
        _leave(done.code)
    except typer.Exit as done:
        _leave(done.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _say("interrupted")
        _leave(128 + signal.SIGINT)
    except Terminated as stopped:
        _say(f"terminated by {signal.Signals(stopped.signum).name}")
        _leave(128 + stopped.signum)
    except typer.exceptions.TyperException as exc:  # a usage error the argument parser found
        exc.show()  # type: ignore[attr-defined]
        _leave(common.EXIT_USAGE)
    except BrokenPipeError:
        # The reader of stdout went away (`| head`, a closed pager): what it read is what it
        # wanted; end without a traceback or a complaint.
        quiet_stdout()
        _leave(0)
    except OSError as exc:
        if not is_machine_error(exc):
            _leave(common.internal_error(exc))
        # Standard output on a full disk (`> /dev/full`) or failing: the machine's doing (5).
        _say(f"error: cannot write the output: {exc.strerror or exc}")
        _leave(common.EXIT_ENVIRONMENT)
    except (MemoryError, SystemError) as exc:
        if isinstance(exc, SystemError) and "without exception set" not in str(exc):
            _leave(common.internal_error(exc))
        # The machine's limit, not a bug: say what narrows the run (5, like a full disk). A C extension whose
        # allocation fails may return without setting MemoryError (the regex module does, under a memory limit):
        # Python then raises SystemError "error return without exception set".
        _say("error: ran out of memory: the events of this input do not fit in the memory this process may use; "
             "narrow the run (--group, --since/--until, fewer files), use --jobs 1, or run it on Spark (batch)")
        _leave(common.EXIT_ENVIRONMENT)
    except Exception as exc:
        _leave(common.internal_error(exc))
    _leave(code if isinstance(code, int) else 0)


def _stopped(signum: int, frame) -> None:
    """SIGTERM (a CI cancel, a pod stop) and SIGHUP (a closed terminal) stop the run like Ctrl-C:
    raised where it is, so its temporary files and workers are cleaned up on the way out."""
    for stop in (signal.SIGTERM, signal.SIGHUP):   # a second signal does not cut the cleanup short
        signal.signal(stop, signal.SIG_IGN)
    raise Terminated(signum)


def _say(message: str) -> None:
    try:
        print(message, file=sys.stderr)
    except (OSError, ValueError, AttributeError):   # stderr closed
        pass


def _leave(code: object) -> NoReturn:
    # Tearing the interpreter down (freeing every module, the compiled patterns, pyarrow's and
    # numpy's state) takes ~0.12 s after every command, a tenth of `analyze` on a small input;
    # nothing needs it: the outputs are closed by now. Exit handlers still run.
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # what sys.exit does with a message
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError as exc:
            # The last of the payload met a full disk: the run did not deliver it (5), unless a
            # code that weighs more holds (4, 2). A closed pipe (| head) is not a failure.
            if is_machine_error(exc) and status not in (common.EXIT_INTERNAL, common.EXIT_USAGE):
                status = common.EXIT_ENVIRONMENT
                _say(f"error: cannot write the output: {exc.strerror or exc}")
        except (ValueError, AttributeError):  # a closed stream: nothing left to say
            pass
    atexit._run_exitfuncs()
    os._exit(status)
