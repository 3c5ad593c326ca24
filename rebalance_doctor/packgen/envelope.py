"""Render one record in a shipped layout: the envelope (time, level, thread, logger) around a message.

What each layout in ``patterns/layouts.toml`` writes, as the logging framework writes it (log4j's
``%c`` suffix after a message's first line when a stack trace follows, Spring Boot's abbreviated
logger and padded thread, JSON encoders' keys). The layout fixtures, the incident fixtures, the
coverage renderer and the incident simulator all render through ``render``.
"""

from __future__ import annotations

import json


def _suffix_after_first_line(prefix, msg, suffix):
    first, _, rest = msg.partition("\n")
    # log4j appends (%c) after the message's last line; a Throwable's trace follows the suffix line.
    if "\tat " in rest:
        return f"{prefix}{first} {suffix}\n{rest}"
    return f"{prefix}{msg} {suffix}" if not msg.endswith("\n") else f"{prefix}{msg} {suffix}"


JSON_THROWABLE_KEYS = {"logstash-json": "stack_trace", "ecs-json": "error.stack_trace", "quarkus-json": "stackTrace"}


def render(layout: str, ts, level, logger, msg, thread, line: int | None = None, throwable: str | None = None,
           ndc: str = "") -> str:
    """One record as ``layout`` writes it; ``line`` is the caller's source line where the layout prints
    one (%L), else a fixed stand-in; ``throwable`` is a logged exception (its toString and stack
    frames), which text layouts print on the lines after the record and JSON encoders in their own key;
    ``ndc`` is what log4j2's ``%x`` prints (Kafka 4's Streams quickstart layout: ``[]``)."""
    text = _render(layout, ts, level, logger, msg, thread, line, ndc)
    if throwable is None:
        return text
    if layout in JSON_THROWABLE_KEYS:
        record = json.loads(text)
        record[JSON_THROWABLE_KEYS[layout]] = throwable
        return json.dumps(record)
    if layout == "log4j2-json":
        record = json.loads(text)
        name, _, message = throwable.split("\n", 1)[0].partition(": ")
        record["thrown"] = {"name": name, "message": message} if message else {"name": name}
        return json.dumps(record)
    return f"{text}\n{throwable}"


def _render(layout: str, ts, level, logger, msg, thread, line: int | None, ndc: str = "") -> str:
    ms = f"{ts.microsecond // 1000:03d}"
    d = f"{ts:%Y-%m-%d %H:%M:%S},{ms}"
    iso_t = f"{ts:%Y-%m-%dT%H:%M:%S}.{ms}"
    if layout == "kafka":
        return _suffix_after_first_line(f"[{d}] {level} ", msg, f"({logger})")
    if layout == "kafka-connect":
        return _suffix_after_first_line(f"[{d}] {level} ", msg, f"({logger}:{line or 611})")
    if layout == "kafka-thread":
        return _suffix_after_first_line(f"[{d}] {level} [{thread}] ", msg, f"({logger})")
    if layout == "kafka-plain":
        return _suffix_after_first_line(f"{d} {level} ", msg, f"({logger})")
    if layout == "strimzi":
        return _suffix_after_first_line(f"{d} {level} ", msg, f"({logger}) [{thread}]")
    if layout == "plain-logger-colon":
        return f"{d} {level} {logger}: {msg}"
    if layout == "log4j-iso-thread":
        return f"{d} {level:<5} [{thread}] {logger} - {msg}"
    if layout == "log4j-iso":
        return f"{d} {level:<5} {logger} - {msg}"
    if layout == "level-first":
        return f"{level} - {d} - {logger}:{line or 962} - {msg}  "
    if layout == "bracket":
        return f"[{iso_t}][{level}][{thread}][][{logger} Line:{line or 576}] {msg}"
    if layout == "bracket-spaced":
        return f"[{d}] [{level}] [{thread}] [{logger}] - {msg}"
    if layout == "spring-boot":
        return f"{ts:%Y-%m-%d %H:%M:%S}.{ms} {level:>5} 1 --- [{thread[-15:]:>15}] {_abbrev(logger):<40} : {msg}"
    if layout == "spring-boot-3":
        return f"{iso_t}+01:00 {level:>5} 1 --- [{thread[-15:]:>15}] {_abbrev(logger):<40} : {msg}"
    if layout == "logback-default":
        return f"{ts:%H:%M:%S}.{ms} [{thread}] {level:<5} {_abbrev(logger)} - {msg}"
    if layout == "log4j2-pattern":
        return f"{ts:%Y-%m-%d %H:%M:%S}.{ms} [{thread}] {level:<5} {_abbrev(logger)} - {msg}"
    if layout == "quarkus":
        return f"{d} {level:<5} [{_abbrev(logger)}] ({thread}) {msg}"
    if layout == "streams-quickstart":
        return f"{ts:%H:%M:%S},{ms} {level:<5} {logger:<60} {ndc} - {msg}"
    if layout == "us-date-ampm":
        hour = ts.hour % 12 or 12
        return f"{ts.month}/{ts.day}/{ts:%y} {hour}:{ts:%M:%S}.{ms} {'PM' if ts.hour >= 12 else 'AM'} {level} {_abbrev(logger)} {msg}"
    if layout == "logstash-json":
        return json.dumps({"@timestamp": iso_t + "Z", "@version": "1", "message": msg, "logger_name": logger,
                           "thread_name": thread, "level": level, "level_value": 20000})
    if layout == "ecs-json":
        return json.dumps({"@timestamp": iso_t + "Z", "log.level": level, "message": msg,
                           "process.thread.name": thread, "log.logger": logger})
    if layout == "log4j2-json":
        epoch = int(ts.timestamp())
        return json.dumps({"instant": {"epochSecond": epoch, "nanoOfSecond": ts.microsecond * 1000},
                           "thread": thread, "level": level, "loggerName": logger, "message": msg})
    if layout == "quarkus-json":
        return json.dumps({"timestamp": iso_t + "Z", "sequence": 1, "loggerName": logger, "level": level,
                           "message": msg, "threadName": thread})
    raise KeyError(layout)


def _abbrev(logger: str) -> str:
    parts = logger.split(".")
    return ".".join([p[0] for p in parts[:-2]] + parts[-2:]) if len(logger) > 39 else logger


# ---------------------------------------------------------------------------------------------
# Non-Java clients' layouts (patterns/layouts.toml, issue 19's section): what each client or
# binding writes around a message. ``logger`` is librdkafka's facility for its layouts.

_SYSLOG_LEVEL = {"EMERG": 0, "ALERT": 1, "CRIT": 2, "CRITICAL": 2, "ERROR": 3, "WARNING": 4, "WARN": 4,
                 "NOTICE": 5, "INFO": 6, "DEBUG": 7}
_PY_LEVEL = {0: "CRITICAL", 1: "CRITICAL", 2: "CRITICAL", 3: "ERROR", 4: "WARNING", 5: "INFO", 6: "INFO", 7: "DEBUG"}
_DOTNET_LEVEL = {0: "Emergency", 1: "Alert", 2: "Critical", 3: "Error", 4: "Warning", 5: "Notice", 6: "Info", 7: "Debug"}
_RUBY_LEVEL = {"DEBUG": "DEBUG", "INFO": "INFO", "NOTICE": "INFO", "WARNING": "WARN", "WARN": "WARN", "ERROR": "ERROR",
               "CRIT": "FATAL", "CRITICAL": "FATAL", "FATAL": "FATAL"}
_ERLANG_LEVEL = {"DEBUG": "debug", "INFO": "info", "NOTICE": "notice", "WARNING": "warning", "WARN": "warning",
                 "ERROR": "error", "CRIT": "critical", "CRITICAL": "critical"}


def render_client(layout: str, ts, level: str, logger: str, msg: str, thread: str | None = None,
                  client: str | None = None, extra: dict | None = None) -> str:
    """One record in a non-Java client's layout. For the librdkafka layouts ``logger`` is the
    facility, ``client`` the handle name and ``msg`` the text after ``[thrd:<thread>]: ``."""
    ms = f"{ts.microsecond // 1000:03d}"
    epoch = f"{int(ts.timestamp())}.{ms}"
    d = f"{ts:%Y-%m-%d %H:%M:%S}"
    severity = _SYSLOG_LEVEL.get(level.upper(), 6)
    thrd = f"[thrd:{thread or 'main'}]: "
    if layout == "librdkafka":
        return f"%{severity}|{epoch}|{logger}|{client}| {thrd}{msg}"
    if layout == "librdkafka-pipe-date":
        return f"{d}|{epoch}|{logger}|{client}| {thrd}{msg}"
    if layout == "rdkafka-dotnet-legacy":
        return f"{severity}|{d}.{ms}|{client}|{logger}| {msg}"
    if layout == "librdkafka-seconds-offset":
        return f"{ts:%S}.{ms[:2]}+0000 OUT {thrd}{msg}"
    if layout == "librdkafka-dotnet-handler":
        return f"Handle: {client}\tLevel: {_DOTNET_LEVEL[severity]}\tMessage:{thrd}{msg}"
    if layout == "confluent-kafka-go-logevent":
        return f"[{ts:%Y-%m-%dT%H:%M:%S}Z][{client}][{logger}][{severity}]{thrd}{msg}"
    if layout == "node-rdkafka-event-log":
        return f"{{ severity: {severity}, fac: '{logger}' }} {thrd}{msg}"
    if layout == "librdkafka-syslog":
        return f"{ts:%b} {ts.day:2d} {ts:%H:%M:%S} app-1 rdkafka[4242]: {logger}: {client}: {thrd}{msg}"
    if layout == "python-logging":
        if client:  # confluent-kafka-python's logger: "%s [%s] %s" % (fac, name, buf)
            return f"{d},{ms} - consumer - {_PY_LEVEL[severity]} - {logger} [{client}] {thrd}{msg}"
        return f"{d},{ms} - {logger} - {_PY_LEVEL[severity]} - {msg}"
    if layout == "python-logging-no-name":
        return f"{d},{ms} - {_PY_LEVEL[severity]} - {msg}"
    if layout == "python-logging-basic":
        return f"{_PY_LEVEL[severity]}:{logger}:{msg}"
    if layout == "python-mode":
        return f"[{d},{ms}: {_PY_LEVEL[severity]}]: {msg} "
    if layout == "kafkajs-json":
        return json.dumps({"level": level.upper(), "timestamp": f"{ts:%Y-%m-%dT%H:%M:%S}.{ms}Z", "logger": "kafkajs",
                           "message": msg, **(extra or {})}, separators=(",", ":"))
    if layout == "lager-pid":
        return f"[{ts:%H:%M:%S}.{ms}{_ERLANG_LEVEL.get(level.upper(), 'info')[0].upper()}||{thread}] {msg}"
    if layout == "lager":
        return f"{d}.{ms} [{_ERLANG_LEVEL.get(level.upper(), 'info')}] {thread}@{logger}:log:1293 {msg}"
    if layout == "erlang-logger":
        return f"{ts:%Y-%m-%dT%H:%M:%S}.{ts.microsecond:06d}+00:00 {_ERLANG_LEVEL.get(level.upper(), 'info')}: {msg}"
    if layout == "ruby-logger":
        name = _RUBY_LEVEL.get(level.upper(), "INFO")
        text = f"rdkafka: {thrd}{msg}" if client else msg
        return f"{name[0]}, [{ts:%Y-%m-%dT%H:%M:%S}.{ts.microsecond:06d} #4242] {name:>5} -- : {text}"
    if layout == "sarama":
        return f"[Sarama] {ts:%Y/%m/%d %H:%M:%S} {msg}"
    if layout == "go-log":
        return f"{ts:%Y/%m/%d %H:%M:%S} {msg}"
    if layout == "franz-go-basic":
        return f"[{'WARN' if level.upper().startswith('WARN') else level.upper()}] {msg}"
    raise KeyError(layout)
