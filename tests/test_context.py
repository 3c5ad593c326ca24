"""Log-context prefixes: the literal each prefix regex starts with decides which are tried."""

import pytest
import regex

from rebalance_doctor.core.context import ContextPrefix, ContextReader, _leading_literal, load_context_reader


@pytest.mark.parametrize("pattern, lead", [
    (r"\[Consumer clientId=(?P<client>[^,]*)\] ", "[Consumer clientId="),
    (r"stream-thread \[(?P<thread>[^\]]+)\] ", "stream-thread ["),
    (r"ab?c", "a"),          # b is optional: only a is sure
    (r"ab*c", "a"),
    (r"ab{2}c", "a"),
    (r"ab+c", "ab"),         # at least one b
    (r"\d+ x", ""),          # a class, not a literal
    (r"(?:x)y", ""),
    (r"a|b", ""),            # either side may start the match
])
def test_leading_literal(pattern, lead):
    assert _leading_literal(pattern) == lead


def test_first_prefix_in_file_order_wins_where_two_match():
    # Both prefixes match at the same place; the skip by leading literal must not change which.
    general = ContextPrefix("general", "consumer", regex.compile(r"\[(?P<client>[^\]]+)\] "))
    specific = ContextPrefix("specific", "broker", regex.compile(r"\[Group (?P<group>\w+)\] "))
    reader = ContextReader([general, specific], regex.compile(r"(?!)"))
    found = reader.read("[Group g1] Stabilized")
    assert (found.fields, found.component, found.body) == ({"client": "Group g1"}, "consumer", "Stabilized")
    reader = ContextReader([specific, general], regex.compile(r"(?!)"))
    found = reader.read("[Group g1] Stabilized")
    assert (found.fields, found.component, found.body) == ({"group": "g1"}, "broker", "Stabilized")


def test_shipped_prefixes_read_consumer_and_streams_lines():
    reader = load_context_reader()
    found = reader.read("[Consumer clientId=c-1, groupId=orders] Request joining group due to: x")
    assert found.fields == {"client": "c-1", "group": "orders"}
    assert found.body == "Request joining group due to: x"
    found = reader.read("stream-thread [app-3f2a9c1e-1b2c-4d5e-8f90-123456789abc-StreamThread-1] "
                        "Requested to schedule probing rebalance")
    assert found.fields["group"] == "app" and found.component == "streams"


def test_a_consumer_without_group_id_is_in_no_group():
    """A consumer without group.id prints `groupId=null` (Kafka 4.4.0 lab: every Streams instance's
    StateUpdater restore consumer): no group named "null", and no application id derived from a Streams
    client id either (the restore consumer is no member of the application's group)."""
    reader = load_context_reader()
    found = reader.read("[Consumer clientId=order-counts-e4a85c1a-f46e-448e-a999-0f0123b65911-StateUpdater-1-restore-"
                        "consumer, groupId=null] Unsubscribed all topics or patterns and assigned partitions")
    assert "group" not in found.fields
    found = reader.read("[Consumer clientId=order-counts-e4a85c1a-f46e-448e-a999-0f0123b65911-StreamThread-1-restore-"
                        "consumer, groupId=null] Assigned to partition(s): order-counts-changelog-0")
    assert "group" not in found.fields
    found = reader.read("[Consumer clientId=order-counts-e4a85c1a-f46e-448e-a999-0f0123b65911-StreamThread-1-consumer, "
                        "groupId=order-counts] (Re-)joining group")
    assert found.fields["group"] == "order-counts"
